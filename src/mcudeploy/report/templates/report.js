// Sortable, filterable tables of the mcudeploy HTML report. Plain JavaScript, no libraries,
// no network. When it has run it marks <body data-report-ready="1"> (checked by the tests), and
// <body data-page-overflow="N">: how many pixels the page is wider than the window (0: nothing
// sticks out; a wide table scrolls in its own block), and data-label-problems="N": how many
// SVG labels stick out of their picture (clipped) or overlap another label of it, as laid out
// (rotated titles included); data-label-problem-texts names them.
(function () {
  "use strict";
  function sortTable(table, column, header) {
    var body = table.tBodies[0];
    var numeric = header.getAttribute("data-numeric") === "1";
    var ascending = !header.classList.contains("sorted-ascending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[column].getAttribute("data-sort"), y = b.cells[column].getAttribute("data-sort");
      var order = numeric ? (parseFloat(x) || 0) - (parseFloat(y) || 0) : x.localeCompare(y);
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(header.parentNode.children, function (cell) {
      cell.classList.remove("sorted-ascending", "sorted-descending");
    });
    header.classList.add(ascending ? "sorted-ascending" : "sorted-descending");
  }
  function filterTable(table, text) {
    var needle = text.toLowerCase();
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      row.style.display = row.textContent.toLowerCase().indexOf(needle) >= 0 ? "" : "none";
    });
  }
  function inside(box, frame) {
    return box.left >= frame.left - 1 && box.right <= frame.right + 1 && box.top >= frame.top - 1 &&
      box.bottom <= frame.bottom + 1;
  }
  function overlap(a, b) {
    return a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  }
  function labelProblems() {
    var found = [];
    document.querySelectorAll("svg").forEach(function (svg) {
      var frame = svg.getBoundingClientRect();
      var labels = Array.prototype.filter.call(svg.querySelectorAll("text"), function (text) {
        return text.textContent.trim() !== "";
      }).map(function (text) { return {text: text.textContent, box: text.getBoundingClientRect()}; });
      labels.forEach(function (label, index) {
        if (!inside(label.box, frame)) { found.push("clipped: " + label.text); }
        labels.slice(index + 1).forEach(function (other) {
          if (overlap(label.box, other.box)) { found.push("overlap: " + label.text + " / " + other.text); }
        });
      });
    });
    return found;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, column) {
      header.addEventListener("click", function () { sortTable(table, column, header); });
    });
  });
  document.querySelectorAll("input.filter").forEach(function (input) {
    var table = document.getElementById(input.getAttribute("data-table"));
    input.addEventListener("input", function () { filterTable(table, input.value); });
  });
  var data = JSON.parse(document.getElementById("run-data").textContent);
  var state = document.getElementById("report-state");
  state.textContent = "interactive report: run " + (data.run.id === null ? "(not recorded)" : data.run.id) +
    ", " + Object.keys(data.run.figures).length + " figures, " + data.layers.length + " layers";
  var problems = labelProblems();
  document.body.setAttribute("data-label-problems", String(problems.length));
  document.body.setAttribute("data-label-problem-texts", problems.join(" | "));
  var page = document.documentElement;
  document.body.setAttribute("data-page-overflow", String(Math.max(0, page.scrollWidth - page.clientWidth)));
  document.body.setAttribute("data-report-ready", "1");
}());
