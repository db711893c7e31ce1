(function () {
  var tip = document.getElementById('tip');
  function t(ns) {
    ns = +ns; var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + ' \u00b5s';
    return ns + ' ns';
  }
  function rankOf(el) {
    var g = el.closest('g.rank');
    return g ? '   rank ' + g.getAttribute('data-rank') + (g.getAttribute('data-source') ? ' (' + g.getAttribute('data-source') + ')' : '') : '';
  }
  function text(el) {
    if (el.getAttribute('data-tip')) return el.getAttribute('data-tip');
    var p = el.getAttribute('data-phase');
    if (p) {
      return p + '   ' + el.getAttribute('data-of') + rankOf(el) + '\nduration  ' + t(el.getAttribute('data-dur')) +
        '\ncomm      ' + t(el.getAttribute('data-comm')) + '\nexposed   ' + t(el.getAttribute('data-exposed'));
    }
    var a = el.getAttribute('data-action');
    if (!a) return null;
    var s = a + rankOf(el);
    s += '\nstart     ' + t(el.getAttribute('data-start')) + '\nduration  ' + t(el.getAttribute('data-dur'));
    var f = el.getAttribute('data-flops'), b = el.getAttribute('data-bytes');
    if (f) s += '\nflops     ' + (+f / 1e9).toFixed(2) + ' GFLOP';
    if (b) s += '\nbytes     ' + (+b / 1048576).toFixed(2) + ' MiB';
    return s;
  }
  document.addEventListener('mouseover', function (e) {
    var el = e.target.closest ? e.target.closest('[data-action],[data-tip],[data-phase]') : null;
    var s = el ? text(el) : null;
    if (!s) { tip.hidden = true; return; }
    tip.textContent = s; tip.hidden = false;
  });
  document.addEventListener('mousemove', function (e) {
    if (tip.hidden) return;
    var x = e.clientX + 14, y = e.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 4) x = e.clientX - tip.offsetWidth - 10;
    if (y + tip.offsetHeight > window.innerHeight - 4) y = e.clientY - tip.offsetHeight - 10;
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  });
  document.body.setAttribute('data-script', 'ready');  // lets tests see that the script ran
})();
