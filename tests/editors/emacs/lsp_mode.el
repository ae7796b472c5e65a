;;; lsp_mode.el --- a real lsp-mode drives torchward lsp  -*- lexical-binding: t -*-
;;
;; emacs --batch -l lsp_mode.el RESULT SCRIPT CONFIG
;; CONFIG is docs/editors.md's lsp-mode snippet, with the test's server command (written
;; by test_lsp_mode.py). Loads it as a user's init would, opens SCRIPT in python-mode,
;; waits for the server's diagnostics, picks the code action "Explain TW001" as
;; `lsp-execute-code-action' does, asks for the code lenses (the GPU fit), and writes
;; what Emacs got and showed as JSON to RESULT.

(setq lsp-client-packages nil          ; only the client the snippet registers
      lsp-auto-guess-root t             ; no prompt for the project root
      lsp-enable-file-watchers nil
      lsp-restart 'ignore
      lsp-diagnostics-provider :none    ; diagnostics read from lsp-mode's own table
      lsp-session-file (expand-file-name "lsp-session" temporary-file-directory))
(require 'json)

(let* ((args command-line-args-left)
       (result (nth 0 args))
       (script (nth 1 args))
       (config (nth 2 args))
       (seen (list))
       (steps (list)))
  (setq command-line-args-left nil)
  (defun torchward--step (name) (push name steps))
  (defun torchward--messages-since (start)
    (with-current-buffer "*Messages*" (buffer-substring (min (1+ start) (point-max)) (point-max))))
  (defun torchward--write (&optional error)
    (with-temp-file result
      (insert (json-encode
               `((steps . ,(vconcat (reverse steps)))
                 (error . ,error)
                 ,@seen
                 (messages . ,(with-current-buffer "*Messages*" (buffer-string))))))))
  (defun torchward--wait (seconds done)
    (let ((deadline (+ (float-time) seconds)))
      (while (and (< (float-time) deadline) (not (funcall done)))
        (accept-process-output nil 0.1))
      (funcall done)))
  (condition-case err
      (progn
        (load config nil t)              ; the documented snippet
        (require 'lsp-mode)
        (torchward--step "configured")
        (find-file script)
        (python-mode)                    ; runs the snippet's hook (lsp-deferred)
        (unless (torchward--wait 5 (lambda () (lsp-workspaces)))
          (lsp))                         ; batch Emacs shows no window for lsp-deferred to wait on
        (torchward--wait 60 (lambda () (seq-some (lambda (w) (eq (lsp--workspace-status w) 'initialized))
                                                 (lsp-workspaces))))
        (push `(servers . ,(vconcat (mapcar (lambda (w) (symbol-name (lsp--workspace-server-id w))) (lsp-workspaces)))) seen)
        (torchward--step "connected")
        (let* ((file (lsp--fix-path-casing (buffer-file-name)))
               (diagnostics (lambda () (gethash file (lsp-diagnostics t)))))
          (torchward--wait 60 (lambda () (seq-some (lambda (d) (equal (lsp-get d :code) "TW001")) (funcall diagnostics))))
          (push `(diagnostics . ,(vconcat (mapcar (lambda (d) (format "%s %s" (lsp-get d :code) (lsp-get d :message)))
                                                  (funcall diagnostics))))
                seen)
          (torchward--step "diagnostics")
          ;; "Explain TW001", picked from the code actions at the finding
          (let* ((finding (seq-find (lambda (d) (equal (lsp-get d :code) "TW001")) (funcall diagnostics)))
                 (range (lsp-get finding :range))
                 (actions (lsp-request "textDocument/codeAction"
                                       (list :textDocument (lsp--text-document-identifier)
                                             :range range
                                             :context (list :diagnostics (vector finding)))))
                 (explain (seq-find (lambda (a) (string-prefix-p "Explain TW001" (lsp-get a :title))) actions))
                 (before (with-current-buffer "*Messages*" (buffer-size))))
            (push `(actions . ,(vconcat (mapcar (lambda (a) (lsp-get a :title)) actions))) seen)
            (when explain
              (lsp-execute-code-action explain)
              (torchward--wait 20 (lambda () (string-match-p "TW001" (torchward--messages-since before))))
              (push `(explain . ,(torchward--messages-since before)) seen)))
          (torchward--step "explained")
          ;; the GPU fit: the code lens above the training loop (lsp-lens-mode shows these)
          (let ((titles nil))
            (torchward--wait 30 (lambda ()
                                  (setq titles (mapcar (lambda (lens) (lsp-get (lsp-get lens :command) :title))
                                                       (lsp-request "textDocument/codeLens"
                                                                    (list :textDocument (lsp--text-document-identifier)))))
                                  (seq-some (lambda (title) (string-prefix-p "Peak" title)) titles)))
            (push `(lenses . ,(vconcat titles)) seen))
          (torchward--step "lenses"))
        (ignore-errors (lsp-workspace-shutdown (car (lsp-workspaces))))
        (torchward--write))
    (error (torchward--write (format "%S" err))))
  (kill-emacs 0))
