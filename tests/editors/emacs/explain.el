;;; explain.el --- a real eglot drives torchward lsp: Explain and the GPU fit  -*- lexical-binding: t -*-
;;
;; emacs --batch -l explain.el RESULT SCRIPT SERVER-COMMAND...
;; Opens SCRIPT in python-mode under eglot with SERVER-COMMAND, waits for the server's
;; diagnostics, runs the command "Explain TW001" exactly as picking the code action does
;; (`eglot-execute-command'), and the GPU fit's source action; writes what Emacs showed
;; (the *Messages* lines the server caused) as JSON to RESULT.

(require 'eglot)
(require 'json)

(let* ((args command-line-args-left)
       (result (nth 0 args))
       (script (nth 1 args))
       (server (nthcdr 2 args))
       (seen (list))
       (steps (list)))
  (setq command-line-args-left nil)
  (defun torchward--step (name) (push name steps))
  (defun torchward--write (&optional error)
    (with-temp-file result
      (insert (json-encode
               `((steps . ,(vconcat (reverse steps)))
                 (error . ,error)
                 ,@seen
                 (messages . ,(with-current-buffer "*Messages*" (buffer-string))))))))
  (condition-case err
      (progn
        (setq eglot-server-programs `((python-mode . ,server)))
        (setq eglot-sync-connect t eglot-connect-timeout 60)
        (find-file script)
        (python-mode)
        (torchward--step "opened")
        (apply #'eglot (eglot--guess-contact))
        (torchward--step "connected")
        (let ((server (eglot-current-server))
              (deadline (+ (float-time) 60)))
          ;; wait for the server's diagnostics (Flymake) to name TW001
          (while (and (< (float-time) deadline)
                      (not (seq-some (lambda (d) (string-match-p "TW001" (format "%s" (flymake-diagnostic-text d))))
                                     (flymake-diagnostics))))
            (accept-process-output nil 0.1))
          (push `(diagnostics . ,(vconcat (mapcar (lambda (d) (flymake-diagnostic-text d)) (flymake-diagnostics)))) seen)
          (torchward--step "diagnostics")
          ;; "Explain TW001": eglot sends the command and drops what it returns
          (let ((before (with-current-buffer "*Messages*" (buffer-size))))
            (eglot-execute-command server "torchward.explain" ["TW001"])
            (let ((deadline (+ (float-time) 20)))
              (while (and (< (float-time) deadline)
                          (not (string-match-p "TW001" (with-current-buffer "*Messages*"
                                                         (buffer-substring (1+ before) (point-max))))))
                (accept-process-output nil 0.1)))
            (push `(explain . ,(with-current-buffer "*Messages*" (buffer-substring (1+ before) (point-max)))) seen))
          (torchward--step "explained")
          ;; the GPU fit, through the code actions eglot lists
          (let* ((ask (lambda ()
                        (jsonrpc-request server :textDocument/codeAction
                                         (list :textDocument (eglot--TextDocumentIdentifier)
                                               :range (list :start (eglot--pos-to-lsp-position (point-min))
                                                            :end (eglot--pos-to-lsp-position (point-min)))
                                               :context (list :diagnostics [])))))
                 (find (lambda (actions)
                         (seq-find (lambda (a) (equal (plist-get a :kind) "source.showGpuFit.torchward")) actions)))
                 (actions (funcall ask))
                 (deadline (+ (float-time) 30)))
            ;; the estimate follows the diagnostics: ask until the fit is there
            (while (and (not (funcall find actions)) (< (float-time) deadline))
              (accept-process-output nil 0.2)
              (setq actions (funcall ask)))
            (let ((fit (funcall find actions)))
            (push `(actions . ,(vconcat (mapcar (lambda (a) (plist-get a :title)) actions))) seen)
            (when fit
              (let ((before (with-current-buffer "*Messages*" (buffer-size)))
                    (command (plist-get fit :command)))
                (eglot-execute-command server (plist-get command :command) (plist-get command :arguments))
                (let ((deadline (+ (float-time) 20)))
                  (while (and (< (float-time) deadline)
                              (not (string-match-p "Peak" (with-current-buffer "*Messages*"
                                                            (buffer-substring (1+ before) (point-max))))))
                    (accept-process-output nil 0.1)))
                (push `(gpu_fit . ,(with-current-buffer "*Messages*" (buffer-substring (1+ before) (point-max)))) seen)))))
          (torchward--step "gpu-fit")
          (ignore-errors (eglot-shutdown server)))
        (torchward--write))
    (error (torchward--write (format "%S" err))))
  (kill-emacs 0))
