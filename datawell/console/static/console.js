// The console's own scripts, on every page: the schema editor's rows, the ask form, the
// "Go back" link and the multipart upload. The pages' Content-Security-Policy runs no inline
// script, so every behaviour lives here (see datawell/console/headers.py).
// The upload calls the REST API with the session cookie; unsafe calls carry the page's
// CSRF token in X-CSRF-Token (see datawell/console/session.py).
(function () {
  "use strict";
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  // The ask form empties its question once the question was accepted.
  document.addEventListener("htmx:afterRequest", function (event) {
    const form = event.target;
    if (event.detail.successful && form.matches && form.matches("[data-clear-on-success]")) {
      form.querySelector("textarea").value = "";
    }
  });

  // Schema editor: add and remove field rows.
  document.addEventListener("click", function (event) {
    const target = event.target;
    if (target.matches("[data-back]") && window.history.length > 1) {
      event.preventDefault();
      window.history.back();
    } else if (target.matches("[data-add-field]")) {
      const rows = document.getElementById("fields");
      const row = rows.querySelector(".field-row").cloneNode(true);
      row.querySelectorAll("input").forEach(function (input) { input.value = ""; });
      rows.appendChild(row);
      row.querySelector("input").focus();
    } else if (target.matches("[data-remove-field]")) {
      const rows = document.getElementById("fields");
      if (rows.children.length > 1) target.closest(".field-row").remove();
    }
  });

  const box = document.querySelector("[data-upload]");
  if (!box) return;
  const base = box.dataset.upload;
  const input = box.querySelector("[data-file]");
  const bar = box.querySelector("[data-progress]");
  const status = box.querySelector("[data-upload-status]");
  const abortButton = box.querySelector("[data-abort]");
  let current = null; // {uploadId, key, xhr, aborted}

  function say(text, failed) {
    status.textContent = text;
    status.className = failed ? "error-text" : "";
  }

  function problemText(body, fallback) {
    const problems = (body.sub_errors || []).map(function (s) { return s.message; });
    return [body.message || fallback].concat(problems).join(" · ");
  }

  async function call(path, body) {
    const response = await fetch(base + path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    });
    const answer = await response.json().catch(function () { return {}; });
    if (!response.ok) throw new Error(problemText(answer, "the request failed (" + response.status + ")"));
    return answer;
  }

  function putPart(url, blob, onProgress) {
    return new Promise(function (resolve, reject) {
      const xhr = new XMLHttpRequest();
      current.xhr = xhr;
      xhr.open("PUT", url);
      xhr.upload.onprogress = function (e) { onProgress(e.loaded); };
      xhr.onload = function () {
        if (xhr.status >= 200 && xhr.status < 300) {
          let etag = xhr.getResponseHeader("ETag");
          if (!etag) { try { etag = JSON.parse(xhr.responseText).etag; } catch (e) { etag = ""; } }
          resolve(etag);
        } else {
          let body = {};
          try { body = JSON.parse(xhr.responseText); } catch (e) { /* not JSON */ }
          reject(new Error(problemText(body, "a part was refused (" + xhr.status + ")")));
        }
      };
      xhr.onerror = function () { reject(new Error("the connection failed while sending a part")); };
      xhr.onabort = function () { reject(new Error("aborted")); };
      xhr.send(blob);
    });
  }

  async function upload(file) {
    bar.hidden = false; bar.value = 0; abortButton.hidden = false;
    say("Preparing " + file.name + "…");
    current = { aborted: false };
    try {
      const prepared = await call("/prepare", { filename: file.name, size: file.size });
      current.uploadId = prepared.uploadId; current.key = prepared.key;
      const parts = [];
      let sent = 0;
      for (let i = 0; i < prepared.presignedUrls.length; i++) {
        const part = prepared.presignedUrls[i];
        const blob = file.slice(i * prepared.partSize, i * prepared.partSize + part.size);
        const etag = await putPart(part.url, blob, function (loaded) {
          bar.value = Math.round(100 * (sent + loaded) / file.size);
          say("Sending " + file.name + ": " + bar.value + "%");
        });
        sent += part.size;
        parts.push({ partNumber: i + 1, etag: etag });
      }
      const done = await call("/complete", { uploadId: current.uploadId, key: current.key, parts: parts });
      bar.value = 100;
      say("Uploaded " + file.name + "; ingestion " + done.id + " is " + done.status + ".");
      htmx.trigger("#attempts", "refresh");
    } catch (error) {
      if (current.aborted) {
        say("Upload aborted.");
      } else {
        say("Upload failed: " + error.message, true);
      }
    } finally {
      abortButton.hidden = true;
      current = null;
      input.value = "";
    }
  }

  abortButton.addEventListener("click", async function () {
    if (!current) return;
    const upload = current;
    upload.aborted = true;
    if (upload.xhr) upload.xhr.abort();
    if (upload.uploadId) {
      try { await call("/abort", { uploadId: upload.uploadId, key: upload.key }); } catch (e) { /* already closed */ }
    }
  });

  input.addEventListener("change", function () { if (input.files.length) upload(input.files[0]); });
  box.addEventListener("dragover", function (e) { e.preventDefault(); box.classList.add("over"); });
  box.addEventListener("dragleave", function () { box.classList.remove("over"); });
  box.addEventListener("drop", function (e) {
    e.preventDefault();
    box.classList.remove("over");
    if (e.dataTransfer.files.length && !current) upload(e.dataTransfer.files[0]);
  });
})();
