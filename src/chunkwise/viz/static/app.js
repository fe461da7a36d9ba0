// chunkwise serve: send the form to /view whenever it changes and draw the answer; search with highlights.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var timer = null, seq = 0;

  function specs() {
    var shared = {max_tokens: +$("max_tokens").value, min_tokens: +$("min_tokens").value,
                  overlap: +$("overlap").value};
    var extra = {};
    if ($("params").value.trim()) extra = JSON.parse($("params").value);
    var main = {strategy: $("strategy").value, params: Object.assign({}, shared, extra)};
    var out = [main];
    Array.prototype.forEach.call($("compare").selectedOptions, function (o) {
      if (out.length < 4) out.push({strategy: o.value, params: Object.assign({}, shared)});
    });
    return out;
  }

  function showError(msg) {
    $("status").className = "error";
    $("status").textContent = msg;
  }

  function run() {
    var form = new FormData(), mine = ++seq;
    try { form.append("strategies", JSON.stringify(specs())); }
    catch (e) { showError("other parameters: not valid JSON"); return; }
    form.append("text", $("text").value);
    if ($("file").files.length) form.append("file", $("file").files[0]);
    $("status").className = "info";
    $("status").textContent = "chunking…";
    fetch("/view", {method: "POST", body: form}).then(function (r) {
      return r.json().then(function (body) { return {ok: r.ok, body: body}; });
    }).then(function (res) {
      if (mine !== seq) return;  // a newer request is on its way
      if (!res.ok) { showError(res.body.error || "request failed"); return; }
      var view = $("view");
      view.innerHTML = res.body.html;
      $("status").className = "info";
      $("status").textContent = res.body.source + ": " + res.body.data.strategies.map(function (s) {
        return s.label + " " + s.chunks.length + " chunks";
      }).join(" · ");
      window.chunkwiseViz.render(view, res.body.data);
    }).catch(function (e) { showError(String(e)); });
  }

  function later() { clearTimeout(timer); timer = setTimeout(run, 300); }

  ["strategy", "max_tokens", "min_tokens", "overlap", "params", "compare", "file"].forEach(function (id) {
    $(id).addEventListener("change", later);
  });
  $("text").addEventListener("input", later);
  $("run").addEventListener("click", run);

  function marked(text, spans) {
    var out = "", pos = 0;
    spans.forEach(function (s) {
      out += esc(text.slice(pos, s[0])) + "<mark>" + esc(text.slice(s[0], s[1])) + "</mark>";
      pos = s[1];
    });
    return out + esc(text.slice(pos));
  }

  function esc(x) {
    return String(x).replace(/[&<>"]/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c];
    });
  }

  $("search-run").addEventListener("click", function () {
    fetch("/search", {method: "POST", headers: {"Content-Type": "application/json"},
                      body: JSON.stringify({query: $("query").value, k: +$("k").value, hybrid: $("hybrid").checked})})
      .then(function (r) { return r.json().then(function (b) { return {ok: r.ok, body: b}; }); })
      .then(function (res) {
        if (!res.ok) { $("hits").innerHTML = '<p class="error">' + esc(res.body.error) + "</p>"; return; }
        $("hits").innerHTML = res.body.results.map(function (h) {
          var head = "#" + h.rank + " · " + h.score.toFixed(4) + " · " + h.source +
                     (h.where ? " · " + h.where : "") + (h.section.length ? " · " + h.section.join(" › ") : "");
          return '<div class="hit"><div class="info">' + esc(head) + '</div><div class="doc">' +
                 marked(h.text, h.highlights) + "</div></div>";
        }).join("") || '<p class="info">no results</p>';
      });
  });
})();
