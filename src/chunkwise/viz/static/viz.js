// chunkwise viz: draw the figures and show a chunk's card on hover. Used by the report and the web app.
(function () {
  "use strict";
  var card = null;

  function fmtTime(s) {
    if (s === null || s === undefined) return "?";
    var t = Math.round(s * 10), sign = t < 0 ? "-" : "";
    t = Math.abs(t);
    var tenths = t % 10, secs = Math.floor(t / 10), h = Math.floor(secs / 3600),
        m = Math.floor((secs % 3600) / 60), sec = secs % 60;
    var ss = (sec < 10 ? "0" : "") + sec + "." + tenths;
    return sign + (h ? h + ":" + (m < 10 ? "0" : "") + m + ":" + ss : m + ":" + ss);
  }

  function esc(x) {
    return String(x).replace(/[&<>"]/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c];
    });
  }

  function cardHtml(data, s, ids) {
    var strat = data.strategies[s], out = [];
    ids.forEach(function (i) {
      var c = strat.chunks[i], rows = [];
      rows.push(["tokens", c.token_count + " / " + strat.max_tokens]);
      rows.push(["offsets", c.start + "–" + c.end]);
      if (c.page_start !== null) rows.push(["page", c.where]);
      if (c.start_time !== null) rows.push(["time", fmtTime(c.start_time) + "–" + fmtTime(c.end_time)]);
      if (c.speakers && c.speakers.length) rows.push(["speakers", c.speakers.join(", ")]);
      if (c.section && c.section.length) rows.push(["section", c.section.join(" › ")]);
      rows.push(["cut", c.cause + " — " + (data.causes[c.cause] || "")]);
      out.push("<h3>" + esc(strat.label) + " · chunk " + c.index + "</h3><dl>" + rows.map(function (r) {
        return "<dt>" + esc(r[0]) + "</dt><dd>" + esc(r[1]) + "</dd>";
      }).join("") + "</dl>");
    });
    return out.join("");
  }

  function place(ev) {
    var x = ev.clientX + 14, y = ev.clientY + 14, w = card.offsetWidth, h = card.offsetHeight;
    if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - 14);
    if (y + h > window.innerHeight - 4) y = Math.max(4, ev.clientY - h - 14);
    card.style.left = x + "px";
    card.style.top = y + "px";
  }

  function wire(root, data) {
    card = document.getElementById("card");
    root.querySelectorAll(".column").forEach(function (col) {
      var s = +col.getAttribute("data-index");
      col.addEventListener("mouseover", function (ev) {
        var span = ev.target.closest ? ev.target.closest(".chunk") : null;
        if (!span || !col.contains(span)) return;
        var ids = span.getAttribute("data-chunks").split(" ").map(Number);
        col.querySelectorAll(".chunk.hl").forEach(function (e) { e.classList.remove("hl"); });
        col.querySelectorAll(".chunk").forEach(function (e) {
          var own = e.getAttribute("data-chunks").split(" ").map(Number);
          if (own.indexOf(ids[ids.length - 1]) >= 0) e.classList.add("hl");
        });
        card.innerHTML = cardHtml(data, s, ids);
        card.hidden = false;
        place(ev);
      });
      col.addEventListener("mousemove", function (ev) { if (!card.hidden) place(ev); });
      col.addEventListener("mouseleave", function () {
        card.hidden = true;
        col.querySelectorAll(".chunk.hl").forEach(function (e) { e.classList.remove("hl"); });
      });
    });
  }

  // scroll the columns together: the text at the top of the scrolled column is put at the top of the others
  // (by character offset, since each column wraps its own chunk marks); the report's checkbox turns it off
  function nodeBox(node, doc) {
    var rects;
    if (node.nodeType === 3) {
      var range = document.createRange();
      range.selectNodeContents(node);
      rects = range.getClientRects();
    } else {
      rects = node.getClientRects();
    }
    if (!rects.length) return null;
    var base = doc.getBoundingClientRect().top + doc.clientTop - doc.scrollTop;
    return {top: rects[0].top - base, bottom: rects[rects.length - 1].bottom - base};
  }

  function pieces(doc) {
    var at = 0, out = [];
    doc.childNodes.forEach(function (n) {
      var len = n.textContent.length;
      if (len) out.push({at: at, len: len, node: n});
      at += len;
    });
    return out;
  }

  function offsetAtTop(doc, list) {  // the character offset shown at the top of doc
    var y = doc.scrollTop, lo = 0, hi = list.length - 1;
    while (lo < hi) {  // the first piece whose bottom is below y
      var mid = (lo + hi) >> 1, box = nodeBox(list[mid].node, doc);
      if (box && box.bottom <= y) lo = mid + 1; else hi = mid;
    }
    var p = list[lo], b = p && nodeBox(p.node, doc);
    if (!b) return 0;
    var frac = b.bottom > b.top ? Math.min(1, Math.max(0, (y - b.top) / (b.bottom - b.top))) : 0;
    return p.at + frac * p.len;
  }

  function topForOffset(doc, list, offset) {  // the scrollTop that puts offset at the top of doc
    var lo = 0, hi = list.length - 1;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (list[mid].at <= offset) lo = mid; else hi = mid - 1;
    }
    var p = list[lo], b = p && nodeBox(p.node, doc);
    if (!b) return doc.scrollTop;
    return b.top + (b.bottom - b.top) * Math.min(1, (offset - p.at) / p.len);
  }

  function syncScroll(root) {
    var docs = Array.prototype.slice.call(root.querySelectorAll(".column .doc"));
    var box = root.querySelector("input.sync-scroll");
    if (docs.length < 2) return;
    var lists = docs.map(pieces), driver = null, release = null;
    docs.forEach(function (doc, i) {
      doc.addEventListener("scroll", function () {
        if (box && !box.checked) return;
        if (driver !== null && driver !== i) return;  // a scroll this code caused
        driver = i;
        clearTimeout(release);
        release = setTimeout(function () { driver = null; }, 150);
        var offset = offsetAtTop(doc, lists[i]);
        docs.forEach(function (other, j) {
          if (j !== i) other.scrollTop = topForOffset(other, lists[j], offset);
        });
      }, {passive: true});
    });
  }

  function draw(root, data) {
    var config = {displaylogo: false, responsive: true};
    data.strategies.forEach(function (strat, s) {
      var figs = strat.figures;
      var d = root.querySelector("#plot-distance-" + s), h = root.querySelector("#plot-sizes-" + s);
      if (d && figs.distance && window.Plotly) Plotly.newPlot(d, figs.distance.data, figs.distance.layout, config);
      if (h && figs.sizes && window.Plotly) Plotly.newPlot(h, figs.sizes.data, figs.sizes.layout, config);
    });
  }

  // plotly.js: already loaded; in the web app fetched from the URL in <body data-plotly> on the first render,
  // after the chunk view is on screen (1.5 MB the page does not wait for); in the report embedded
  // gzip-compressed and base64-encoded
  var plotlyLoading = null;
  function plotlyReady() {
    var packed = document.getElementById("plotly-gz"), url = document.body && document.body.dataset.plotly;
    if (window.Plotly) return Promise.resolve();
    if (url && !packed) {
      if (!plotlyLoading) {
        plotlyLoading = new Promise(function (resolve, reject) {
          var script = document.createElement("script");
          script.src = url;
          script.onload = function () { resolve(); };
          script.onerror = function () { plotlyLoading = null; reject(new Error("the charts could not be loaded")); };
          document.head.appendChild(script);
        });
      }
      return plotlyLoading;
    }
    if (!packed) return Promise.resolve();
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this browser cannot unpack the embedded charts (no DecompressionStream)"));
    }
    var raw = atob(packed.textContent.trim()), bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(function (js) {
      var script = document.createElement("script");
      script.textContent = js;
      document.head.appendChild(script);
    });
  }

  // render(root, data): used on load for the report and after every request in the web app
  window.chunkwiseViz = {
    render: function (root, data) {
      wire(root, data);
      syncScroll(root);
      return plotlyReady().then(function () { draw(root, data); }, function (err) {
        root.querySelectorAll(".plot").forEach(function (p) { p.textContent = String(err.message || err); });
      });
    },
    fmtTime: fmtTime
  };
  var el = document.getElementById("viz-data");
  if (el) window.chunkwiseViz.render(document, JSON.parse(el.textContent));
})();
