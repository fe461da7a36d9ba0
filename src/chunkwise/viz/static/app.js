// chunkwise serve: send the form to /view whenever it changes and draw the answer; search with highlights;
// ask with cited sources.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var timer = null, seq = 0, sent = null;

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
    var form = new FormData(), strategies, file = $("file").files[0], key;
    clearTimeout(timer);  // a click runs at once: the change that armed the timer is in this request
    if (!$("text").value.trim() && !file) {  // nothing to chunk yet: no request
      $("status").className = "info";
      $("status").textContent = "paste text or choose a file";
      return;
    }
    try { strategies = JSON.stringify(specs()); }
    catch (e) { showError("other parameters: not valid JSON"); return; }
    // the same form as the last request (a paste, then a click on Chunk): its answer is on its way or shown
    key = [strategies, $("text").value, file ? file.name + ":" + file.size + ":" + file.lastModified : ""];
    if (sent && sent.every(function (v, i) { return v === key[i]; })) return;
    sent = key;
    var mine = ++seq;
    form.append("strategies", strategies);
    form.append("text", $("text").value);
    if ($("file").files.length) form.append("file", $("file").files[0]);
    $("status").className = "info";
    $("status").textContent = "chunking…";
    fetch("/view", {method: "POST", body: form}).then(function (r) {
      return r.json().then(function (body) { return {ok: r.ok, body: body}; });
    }).then(function (res) {
      if (mine !== seq) return;  // a newer request is on its way
      if (!res.ok) { sent = null; showError(res.body.error || "request failed"); return; }
      var view = $("view");
      view.innerHTML = res.body.html;
      $("status").className = "info";
      $("status").textContent = res.body.source + ": " + res.body.data.strategies.map(function (s) {
        return s.label + " " + s.chunks.length + " chunks";
      }).join(" · ");
      window.chunkwiseViz.render(view, res.body.data);
    }).catch(function (e) { if (mine === seq) sent = null; showError(String(e)); });
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

  // ask: the answer (its [n] citations as written), a hedge when the best passage is a weak match, then
  // the cited sources with their text
  function citedText(text) {
    return esc(text).replace(/\[(\d+(?:\s*[,-]\s*\d+)*)\]/g, '<span class="cite">[$1]</span>');
  }

  function ask() {
    var q = $("question").value;
    if (!q.trim()) return;
    $("answer").innerHTML = '<p class="info">answering…</p>';
    fetch("/ask", {method: "POST", headers: {"Content-Type": "application/json"},
                   body: JSON.stringify({question: q, k: +$("k").value, hybrid: $("hybrid").checked})})
      .then(function (r) { return r.json().then(function (b) { return {ok: r.ok, body: b}; }); })
      .then(function (res) {
        var a = res.body;
        if (!res.ok) { $("answer").innerHTML = '<p class="error">' + esc(a.error) + "</p>"; return; }
        if (!a.passages.length) { $("answer").innerHTML = '<p class="info">no relevant passages found</p>'; return; }
        var byNumber = {};
        a.passages.forEach(function (p) { byNumber[p.number] = p; });
        var out = '<div class="answer-text">' + citedText(a.answer) + "</div>";
        if (a.hedge) out += '<p class="hedge">Caution: ' + esc(a.hedge) + "</p>";
        out += a.citations.length ? "<h3>Sources</h3>" : '<p class="info">the answer cites none of the passages</p>';
        out += a.citations.map(function (n) {
          var p = byNumber[n];
          return '<details class="source"><summary>[' + n + "] " + esc(p.label) + '</summary><div class="doc">' +
                 esc(p.text) + "</div></details>";
        }).join("");
        out += a.invalid_citations.map(function (n) {
          return '<p class="error">[' + n + "] is cited but no passage [" + n + "] was given: unsupported citation</p>";
        }).join("");
        if (a.note) out += '<p class="info">' + esc(a.note) + "</p>";
        $("answer").innerHTML = out;
      }).catch(function (e) { $("answer").innerHTML = '<p class="error">' + esc(String(e)) + "</p>"; });
  }

  $("ask-run").addEventListener("click", ask);
  $("question").addEventListener("keydown", function (ev) { if (ev.key === "Enter") ask(); });
  $("query").addEventListener("keydown", function (ev) { if (ev.key === "Enter") $("search-run").click(); });
})();
