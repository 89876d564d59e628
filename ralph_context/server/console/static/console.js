// The memory console's only script: niceties, never needed (every form works without it).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Forgetting cannot be undone: ask first.
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
  // The namespace switcher applies as soon as a namespace is picked.
  for (const select of document.querySelectorAll("select[data-autosubmit]")) {
    select.addEventListener("change", () => select.form.submit());
  }
  // "/" jumps to the query box, as on most search pages.
  const query = document.getElementById("q");
  document.addEventListener("keydown", (event) => {
    const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
    if (query && event.key === "/" && !typing) {
      event.preventDefault();
      query.focus();
      query.select();
    }
  });
});
