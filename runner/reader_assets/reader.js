// The side-by-side reader's script: builds the grid from the chosen frameworks (kept in the
// address, "#fw=pytorch,gluon&diff=1") and marks, token by token, what differs from the left-hand
// column. No library, no network: the page works opened from disk.
(function () {
  "use strict";
  var form = document.querySelector("form.controls");
  var grid = document.getElementById("grid");
  var store = document.querySelector(".store");
  var message = form.querySelector(".message");
  var boxes = Array.prototype.slice.call(form.querySelectorAll('input[name="fw"]'));
  var diffBox = form.querySelector('input[name="diff"]');
  var available = boxes.map(function (box) { return box.value; });
  var maxColumns = parseInt(form.getAttribute("data-max"), 10);
  var defaults = form.getAttribute("data-default").split(",").filter(function (name) {
    return available.indexOf(name) >= 0;
  });
  var titles = {};
  var cells = {};
  Array.prototype.forEach.call(store.querySelectorAll(".section-title"), function (title) {
    titles[title.getAttribute("data-section")] = title;
  });
  var sections = Object.keys(titles);
  Array.prototype.forEach.call(store.querySelectorAll(".cell"), function (cell) {
    var framework = cell.getAttribute("data-fw");
    (cells[framework] = cells[framework] || {})[cell.getAttribute("data-section")] = cell;
  });

  function readAddress() {
    var state = { fw: [], diff: false };
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var pair = part.split("=");
      if (pair[0] === "fw" && pair[1]) {
        decodeURIComponent(pair[1]).split(",").forEach(function (name) {
          if (available.indexOf(name) >= 0 && state.fw.indexOf(name) < 0 && state.fw.length < maxColumns) {
            state.fw.push(name);
          }
        });
      } else if (pair[0] === "diff") {
        state.diff = pair[1] === "1";
      }
    });
    if (!state.fw.length) { state.fw = defaults.length ? defaults.slice() : available.slice(0, 2); }
    return state;
  }

  function writeAddress(state) {
    var hash = "#fw=" + state.fw.join(",") + (state.diff ? "&diff=1" : "");
    if (location.hash === hash) { return; }
    try {
      history.replaceState(null, "", hash);
    } catch (error) {
      location.hash = hash;
    }
  }

  function tokens(cell) {
    return Array.prototype.slice.call(cell.querySelectorAll(".t"));
  }

  // Marks the tokens of `right` that are not in a longest common subsequence with `left`.
  function markDifferences(left, right) {
    var a = tokens(left).map(function (t) { return t.textContent; });
    var spans = tokens(right);
    var b = spans.map(function (t) { return t.textContent; });
    var n = a.length, m = b.length, width = m + 1;
    var table = new Uint32Array((n + 1) * (m + 1));
    for (var i = n - 1; i >= 0; i--) {
      for (var j = m - 1; j >= 0; j--) {
        table[i * width + j] = a[i] === b[j] ? table[(i + 1) * width + j + 1] + 1
          : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
      }
    }
    var x = 0, y = 0;
    while (x < n && y < m) {
      if (a[x] === b[y]) { x++; y++; }
      else if (table[(x + 1) * width + y] >= table[x * width + y + 1]) { x++; }
      else { spans[y].classList.add("diff"); y++; }
    }
    for (; y < m; y++) { spans[y].classList.add("diff"); }
  }

  function render(state) {
    while (grid.firstChild) { store.appendChild(grid.firstChild); }
    Array.prototype.forEach.call(document.querySelectorAll(".t.diff"), function (t) { t.classList.remove("diff"); });
    grid.style.setProperty("--columns", String(state.fw.length));
    state.fw.forEach(function (name) { grid.appendChild(cells[name].head); });
    sections.forEach(function (section) {
      grid.appendChild(titles[section]);
      state.fw.forEach(function (name, index) {
        var cell = cells[name][section];
        grid.appendChild(cell);
        if (state.diff && index > 0) { markDifferences(cells[state.fw[0]][section], cell); }
      });
    });
    boxes.forEach(function (box) { box.checked = state.fw.indexOf(box.value) >= 0; });
    diffBox.checked = state.diff;
    grid.classList.toggle("diff-on", state.diff);
    writeAddress(state);
  }

  var state = readAddress();
  boxes.forEach(function (box) {
    box.addEventListener("change", function () {
      message.textContent = "";
      if (box.checked) {
        if (state.fw.length >= maxColumns) {
          box.checked = false;
          message.textContent = "At most " + maxColumns + " columns: untick one first.";
          return;
        }
        state.fw.push(box.value);
      } else {
        if (state.fw.length === 1) {
          box.checked = true;
          message.textContent = "Keep at least one column.";
          return;
        }
        state.fw.splice(state.fw.indexOf(box.value), 1);
      }
      render(state);
    });
  });
  diffBox.addEventListener("change", function () { state.diff = diffBox.checked; render(state); });
  window.addEventListener("hashchange", function () { state = readAddress(); render(state); });
  render(state);
})();
