// The Graph page: the neighbourhood from the traverse operation, drawn with cytoscape.js.
// Clicking (or tapping) a node opens that note; the list under the drawing is the same graph
// for keyboards and screen readers.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("graph");
    if (!box || typeof window.cytoscape === "undefined") { return; }
    fetch(box.dataset.src, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("graph request failed: " + response.status); }
        return response.json();
      })
      .then(function (data) {
        var cy = window.cytoscape({
          container: box,
          elements: data.elements,
          wheelSensitivity: 0.3,
          style: [
            { selector: "node", style: {
              "label": "data(label)", "font-size": 11, "color": "#1f2937",
              "text-valign": "bottom", "text-margin-y": 4, "text-wrap": "ellipsis",
              "text-max-width": 140, "background-color": "#60a5fa", "width": 18, "height": 18
            } },
            { selector: "node[depth = 0]", style: {
              "background-color": "#b45309", "width": 28, "height": 28, "font-weight": "bold"
            } },
            { selector: "node[depth >= 2]", style: { "background-color": "#a5b4fc" } },
            { selector: "edge", style: {
              "width": 1.5, "line-color": "#9ca3af", "target-arrow-color": "#9ca3af",
              "target-arrow-shape": "triangle", "curve-style": "bezier", "arrow-scale": 0.8
            } }
          ],
          layout: { name: "cose", animate: false, padding: 24, nodeRepulsion: 9000 }
        });
        cy.on("tap", "node", function (event) {
          window.location.assign(event.target.data("href"));
        });
        cy.on("mouseover", "node", function () { box.style.cursor = "pointer"; });
        cy.on("mouseout", "node", function () { box.style.cursor = ""; });
        box.dataset.nodes = String(cy.nodes().length);
        box.classList.add("ready");
        window.remeGraph = cy;
      })
      .catch(function (error) {
        box.textContent = String(error);
        box.classList.add("failed");
      });
  });
})();
