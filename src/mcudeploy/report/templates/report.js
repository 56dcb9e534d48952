// Sortable, filterable tables of the mcudeploy HTML report. Plain JavaScript, no libraries,
// no network. When it has run it marks <body data-report-ready="1"> (checked by the tests), and
// <body data-page-overflow="N">: how many pixels the page is wider than the window (0: nothing
// sticks out; a wide table scrolls in its own block).
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
  var page = document.documentElement;
  document.body.setAttribute("data-page-overflow", String(Math.max(0, page.scrollWidth - page.clientWidth)));
  document.body.setAttribute("data-report-ready", "1");
}());
