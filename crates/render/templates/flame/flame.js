(function () {
  var me = document.currentScript;
  var svg = me.ownerSVGElement || me.parentNode;
  var W = +svg.getAttribute('data-width'), PAD = +svg.getAttribute('data-pad'), CHAR = +svg.getAttribute('data-char');
  var details = svg.querySelector('.details'), reset = svg.querySelector('.reset');
  var searchButton = svg.querySelector('.search'), matched = svg.querySelector('.matched');
  var frames = Array.prototype.map.call(svg.querySelectorAll('g.f'), function (g) {
    var rect = g.querySelector('rect');
    return { g: g, rect: rect, text: g.querySelector('text'), fill: rect.getAttribute('fill'),
             x: +g.getAttribute('data-x'), w: +g.getAttribute('data-w'), d: +g.getAttribute('data-d'),
             n: g.getAttribute('data-n'), tip: g.querySelector('title').textContent };
  });
  function label(name, px) {
    var max = Math.floor((px - 6) / CHAR);
    if (max < 3) return '';
    return name.length <= max ? name : name.slice(0, max - 2) + '..';
  }
  function place(f, x, w) {
    var px = PAD + x * (W - 2 * PAD), pw = w * (W - 2 * PAD);
    f.rect.setAttribute('x', px.toFixed(2));
    f.rect.setAttribute('width', pw.toFixed(2));
    f.text.setAttribute('x', (px + 3).toFixed(2));
    f.text.textContent = label(f.n, pw);
  }
  function zoom(target) {
    var eps = 1e-9;
    frames.forEach(function (f) {
      var inside = f.d >= target.d && f.x >= target.x - eps && f.x + f.w <= target.x + target.w + eps;
      var below = f.d < target.d && f.x <= target.x + eps && f.x + f.w >= target.x + target.w - eps;
      if (inside) {
        f.g.style.display = '';
        f.g.style.opacity = '';
        place(f, (f.x - target.x) / target.w, f.w / target.w);
      } else if (below) {
        f.g.style.display = '';
        f.g.style.opacity = '0.6';
        place(f, 0, 1);
      } else {
        f.g.style.display = 'none';
      }
    });
    reset.setAttribute('visibility', target.d === 0 ? 'hidden' : 'visible');
  }
  function unzoom() {
    var root = frames.filter(function (f) { return f.d === 0; })[0];
    if (root) zoom(root);
  }
  var searching = null;
  function search(pattern) {
    searching = pattern;
    var spans = [];
    frames.forEach(function (f) {
      var hit = pattern !== null && pattern.test(f.n);
      f.rect.setAttribute('fill', hit ? 'rgb(230,0,230)' : f.fill);
      if (hit) spans.push([f.x, f.x + f.w]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -1;
    spans.forEach(function (s) {
      if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
    });
    matched.textContent = pattern === null ? '' : 'Matched: ' + (covered * 100).toFixed(1) + '%';
    searchButton.textContent = pattern === null ? 'Search' : 'Clear search';
  }
  frames.forEach(function (f) {
    f.g.addEventListener('click', function () { zoom(f); });
    f.g.addEventListener('mouseover', function () { details.textContent = f.tip; });
    f.g.addEventListener('mouseout', function () { details.textContent = ' '; });
  });
  reset.addEventListener('click', unzoom);
  searchButton.addEventListener('click', function () {
    if (searching !== null) { search(null); return; }
    var text = window.prompt('Search for functions matching (regular expression):', '');
    if (!text) return;
    try { search(new RegExp(text)); } catch (e) { matched.textContent = 'Bad expression: ' + e.message; }
  });
  (svg.ownerDocument || document).addEventListener('keydown', function (e) {
    if (e.key === 'Escape') unzoom();
  });
  svg.perflabFlame = { zoom: function (name) {
    var f = frames.filter(function (f) { return f.n === name; })[0];
    if (f) zoom(f);
  }, search: function (text) { search(text === null ? null : new RegExp(text)); }, unzoom: unzoom };
})();
