// rocketq dashboard: the little the pages need beyond HTML forms.
"use strict";

// A form with data-confirm asks before it is sent (deleting a topic, resetting offsets).
document.addEventListener("submit", (event) => {
  const question = event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

// Pages with live figures reload themselves while their "refresh" box is ticked (the choice is kept).
for (const box of document.querySelectorAll("input[data-refresh]")) {
  const key = "rocketq-refresh";
  box.checked = localStorage.getItem(key) !== "off";
  box.addEventListener("change", () => localStorage.setItem(key, box.checked ? "on" : "off"));
  setInterval(() => {
    if (box.checked && !document.querySelector("input:focus, select:focus, textarea:focus")) {
      const url = new URL(window.location.href);
      url.searchParams.delete("notice");  // an action's line is said once
      url.searchParams.delete("error");
      window.location.replace(url);
    }
  }, Number(box.dataset.refresh) * 1000);
}

// The message search shows the fields its kind uses.
const by = document.querySelector("form select[name=by]");
if (by) {
  const uses = { id: ["topic", "key"], key: ["topic", "key"], unique: ["topic", "key"],
                 offset: ["topic", "broker", "queue", "offset"], time: ["topic", "begin", "end"] };
  const show = () => {
    for (const input of by.form.querySelectorAll("input")) {
      input.closest("label").hidden = !uses[by.value].includes(input.name);
    }
  };
  by.addEventListener("change", show);
  show();
}
