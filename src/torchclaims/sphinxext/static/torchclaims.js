// Filters for the claims matrix: topic, backend column and verdict. No network.
document.addEventListener("DOMContentLoaded", () => {
  const form = document.querySelector(".tc-filters");
  const table = document.querySelector("table.tc-matrix");
  if (!form || !table) return;
  const value = (name) => form.querySelector(`[data-tc-filter="${name}"]`).value;
  const apply = () => {
    const topic = value("topic"), column = value("column"), verdict = value("verdict");
    const columnCount = table.querySelectorAll("thead th").length - 1;
    for (let i = 0; i < columnCount; i++) {
      const hide = column !== "" && String(i) !== column;
      table.querySelectorAll(`.tc-col-${i}`).forEach((cell) => cell.classList.toggle("tc-hidden", hide));
    }
    table.querySelectorAll("tr.tc-claim-row").forEach((row) => {
      const inTopic = topic === "" || row.classList.contains(`tc-topic-${topic}`);
      const cells = column === "" ? row.querySelectorAll("[class*='tc-verdict-']") : row.querySelectorAll(`.tc-col-${column}`);
      const matches = verdict === "" || Array.from(cells).some((c) => c.classList.contains(`tc-verdict-${verdict}`));
      row.classList.toggle("tc-hidden", !(inTopic && matches));
    });
    table.querySelectorAll("tr.tc-topic-row").forEach((row) => {
      row.classList.toggle("tc-hidden", topic !== "" && !row.classList.contains(`tc-topic-${topic}`));
    });
  };
  form.addEventListener("change", apply);
});
