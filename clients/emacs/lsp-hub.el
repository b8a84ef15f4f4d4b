;;; lsp-hub.el --- Use lsp-hub, one language server in front of many, with Eglot  -*- lexical-binding: t; -*-

;; Package-Requires: ((emacs "28.1") (eglot "1.9") (jsonrpc "1.0"))
;; Keywords: languages, tools

;;; Commentary:

;; Eglot talks to one language server per major mode.  lsp-hub is that one server: behind it run
;; basedpyright and Ruff for Python, typescript-language-server, clangd, gopls..., and it merges their
;; diagnostics and answers.  This file
;;
;;  - registers `lsp-hub' in `eglot-server-programs' for the major modes it serves
;;    (`lsp-hub-eglot-setup'), and
;;  - adds commands for the hub's own features: `lsp-hub-status', `lsp-hub-repo-map',
;;    `lsp-hub-relevant-files', `lsp-hub-callers' and `lsp-hub-syntax-check'.
;;
;; Setup:
;;
;;   (add-to-list 'load-path "/path/to/lsp-hub/clients/emacs")
;;   (require 'lsp-hub)
;;   (lsp-hub-eglot-setup)
;;   (add-hook 'python-mode-hook #'eglot-ensure)   ; and the other modes you want
;;
;; Eglot up to 1.14 (Emacs 28 and 29) gives every buffer of one server the languageId of the mode that
;; started it, so on those versions `lsp-hub-eglot-setup' registers one entry per language: each language
;; gets its own hub process (which still merges all the servers of that language).  Where Eglot keeps a
;; languageId per major mode (`eglot--languages', Emacs 30), one hub serves all modes of a project.

;;; Code:

(require 'eglot)
(require 'jsonrpc)
(require 'seq)
(require 'subr-x)

(defgroup lsp-hub nil
  "lsp-hub: one language server in front of many."
  :group 'eglot
  :prefix "lsp-hub-")

(defcustom lsp-hub-command '("lsp-hub")
  "Program and arguments that start lsp-hub on stdio."
  :type '(repeat string))

(defcustom lsp-hub-initialization-options nil
  "Plist sent as initializationOptions.lspHub.
It follows the hub's configuration schema, as JSON; for example
\(:server (:ruff (:disabled t)))."
  :type '(plist))

(defcustom lsp-hub-major-modes
  ;; More specific modes first: Eglot matches derived modes (js-json-mode derives from js-mode).
  '((python-mode . "python") (python-ts-mode . "python")
    (tsx-ts-mode . "typescriptreact")
    (typescript-ts-mode . "typescript") (typescript-mode . "typescript")
    (js-jsx-mode . "javascriptreact") (rjsx-mode . "javascriptreact")
    (js-json-mode . "json") (json-ts-mode . "json") (json-mode . "json")
    (js-ts-mode . "javascript") (js-mode . "javascript") (js2-mode . "javascript")
    (c-ts-mode . "c") (c-mode . "c")
    (c++-ts-mode . "cpp") (c++-mode . "cpp")
    (go-ts-mode . "go") (go-mode . "go")
    (rust-ts-mode . "rust") (rust-mode . "rust")
    (bash-ts-mode . "sh") (sh-mode . "sh")
    (yaml-ts-mode . "yaml") (yaml-mode . "yaml")
    (mhtml-mode . "html") (html-mode . "html")
    (css-ts-mode . "css") (css-mode . "css"))
  "Major modes served by lsp-hub, each with the LSP languageId it gets."
  :type '(alist :key-type symbol :value-type string))

(defcustom lsp-hub-repo-map-budget 1024
  "Token budget of `lsp-hub-repo-map'."
  :type 'integer)

;;;; Registration

(defun lsp-hub--contact ()
  "The `eglot-server-programs' contact that starts lsp-hub."
  (if lsp-hub-initialization-options
      (append lsp-hub-command
              (list :initializationOptions (list :lspHub lsp-hub-initialization-options)))
    lsp-hub-command))

(defun lsp-hub--per-mode-language-ids-p ()
  "Non-nil when Eglot keeps a languageId per major mode.
Then one server can serve buffers of several languages."
  (fboundp 'eglot--languages))

(defun lsp-hub--mode-specs (modes)
  "MODES (an alist of mode and languageId) as `eglot-server-programs' specs."
  (mapcar (lambda (entry) (list (car entry) :language-id (cdr entry))) modes))

(defun lsp-hub-eglot-entries ()
  "The `eglot-server-programs' entries that `lsp-hub-eglot-setup' adds."
  (if (lsp-hub--per-mode-language-ids-p)
      (list (cons (lsp-hub--mode-specs lsp-hub-major-modes) (lsp-hub--contact)))
    (let ((languages '()))
      (dolist (entry lsp-hub-major-modes)
        (unless (member (cdr entry) languages)
          (push (cdr entry) languages)))
      (mapcar (lambda (language)
                (cons (lsp-hub--mode-specs
                       (seq-filter (lambda (entry) (equal (cdr entry) language)) lsp-hub-major-modes))
                      (lsp-hub--contact)))
              (nreverse languages)))))

;;;###autoload
(defun lsp-hub-eglot-setup ()
  "Make Eglot start lsp-hub for the modes of `lsp-hub-major-modes'.
The entries go first, ahead of Eglot's built-in choices."
  (interactive)
  (dolist (entry (reverse (lsp-hub-eglot-entries)))
    (setq eglot-server-programs (cons entry (delete entry eglot-server-programs)))))

;;;; Talking to the hub

(defun lsp-hub--server ()
  "The Eglot server of this buffer, which must be lsp-hub."
  (or (eglot-current-server)
      (user-error "No Eglot server manages this buffer; run M-x eglot in a file of the project")))

(defun lsp-hub--advertised-p (server command)
  "Non-nil when SERVER advertises COMMAND through executeCommandProvider."
  (let ((provider (plist-get (eglot--capabilities server) :executeCommandProvider)))
    (and provider (seq-contains-p (plist-get provider :commands) command))))

(defun lsp-hub-execute (command &optional argument server)
  "Run the hub's COMMAND with ARGUMENT (a plist) on SERVER; return the result."
  (let ((server (or server (lsp-hub--server))))
    (unless (lsp-hub--advertised-p server command)
      (user-error "This server does not offer %s (is it lsp-hub?)" command))
    (jsonrpc-request server :workspace/executeCommand
                     (list :command command :arguments (if argument (vector argument) [])))))

(defun lsp-hub--uri (&optional file)
  "The file:// URI of FILE (default: this buffer's), spelled as Eglot does."
  (let ((path (or file (buffer-file-name) (user-error "This buffer visits no file"))))
    (if (fboundp 'eglot-path-to-uri) (eglot-path-to-uri path) (eglot--path-to-uri path))))

(defun lsp-hub--file (uri-or-path root)
  "A local file name for URI-OR-PATH.
That is a file:// URI, an absolute path, or a path relative to ROOT."
  (cond ((string-prefix-p "file://" uri-or-path)
         (if (fboundp 'eglot-uri-to-path) (eglot-uri-to-path uri-or-path) (eglot--uri-to-path uri-or-path)))
        ((file-name-absolute-p uri-or-path) uri-or-path)
        (t (expand-file-name uri-or-path root))))

(defun lsp-hub--root (server)
  "The project root of SERVER."
  (let ((project (eglot--project server)))
    (expand-file-name (project-root project))))

(defun lsp-hub--position ()
  "The LSP position of point, in the column units Eglot negotiated."
  (list :line (1- (line-number-at-pos nil t))
        :character (funcall (if (boundp 'eglot-current-linepos-function)
                                eglot-current-linepos-function ; Eglot 1.12 and later
                              eglot-current-column-function))))

(defun lsp-hub--incomplete-note (result)
  "A note when RESULT says it is incomplete, else nil."
  (when (eq (plist-get result :complete) :json-false)
    (let ((pending (plist-get result :pendingFiles))
          (skipped (plist-get result :skippedFiles)))
      (string-join (delq nil (list "incomplete"
                                   (when pending (format "%s files still being indexed"
                                                         (if (sequencep pending) (length pending) pending)))
                                   (when (and skipped (> (length skipped) 0))
                                     (format "%d files skipped" (length skipped)))))
                   ", "))))

(defun lsp-hub--show (name text &optional mode directory)
  "Show TEXT in the read-only buffer NAME.
The buffer gets major MODE and `default-directory' DIRECTORY."
  (let ((buffer (get-buffer-create name)))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert text))
      (when directory (setq default-directory (file-name-as-directory directory)))
      (if mode (funcall mode) (special-mode))
      (goto-char (point-min)))
    (display-buffer buffer)
    buffer))

(defun lsp-hub--null (value)
  "VALUE, or nil when it is JSON null or false."
  (unless (memq value '(:null :json-false)) value))

;;;; Commands

;;;###autoload
(defun lsp-hub-status ()
  "Show the hub's servers, their roots and restarts, and the index state."
  (interactive)
  (let* ((status (lsp-hub-execute "lspHub.status"))
         (hub (plist-get status :hub))
         (index (lsp-hub--null (plist-get status :index)))
         ;; Built backwards with push, reversed at the end.
         (lines (list (format "  %-28s %-9s %-8s %-8s %s" "name" "state" "pid" "restarts" "root (languages)")
                      ""
                      (format "lsp-hub %s (pid %s), %s open documents"
                              (plist-get hub :version) (plist-get hub :pid) (plist-get status :documents)))))
    (seq-doseq (server (plist-get status :servers))
      (push (format "  %-28s %-9s %-8s %-8s %s (%s)" (plist-get server :name) (plist-get server :state)
                    (or (lsp-hub--null (plist-get server :pid)) "-") (plist-get server :restarts)
                    (plist-get server :root) (string-join (append (plist-get server :languages) nil) ", "))
            lines)
      (when-let ((problem (lsp-hub--null (plist-get server :error))))
        (push (format "    error: %s" problem) lines)))
    (push "" lines)
    (push (if index
              (format "index: %s, %s files, %s symbols, last build %s s" (plist-get index :state)
                      (plist-get index :files) (plist-get index :symbols) (plist-get index :lastBuildSeconds))
            "index: not available in this hub")
          lines)
    (lsp-hub--show "*lsp-hub status*" (concat (string-join (nreverse lines) "\n") "\n"))))

;;;###autoload
(defun lsp-hub-repo-map (&optional budget)
  "Show the repository map, personalized toward the current file.
With a prefix argument, ask for the token BUDGET."
  (interactive (list (when current-prefix-arg (read-number "Token budget: " lsp-hub-repo-map-budget))))
  (let* ((server (lsp-hub--server))
         (argument (list :tokenBudget (or budget lsp-hub-repo-map-budget)))
         (argument (if (buffer-file-name) (append argument (list :focusFiles (vector (lsp-hub--uri)))) argument))
         (result (lsp-hub-execute "lspHub.repoMap" argument server))
         (note (lsp-hub--incomplete-note result)))
    (lsp-hub--show "*lsp-hub repo map*" (concat (if note (format "# %s\n" note) "")
                                                 (string-trim-right (plist-get result :text) "\n+") "\n")
                   nil (lsp-hub--root server))))

(defun lsp-hub--grep-buffer (name header lines directory)
  "Show LINES (\"file:line:col: text\") under HEADER in a `grep-mode' buffer.
The buffer is called NAME; file names are relative to DIRECTORY."
  (require 'grep)
  (lsp-hub--show name (concat header "\n\n" (string-join lines "\n") "\n") #'grep-mode directory))

;;;###autoload
(defun lsp-hub-relevant-files (description &optional current-file-is-target)
  "List the files relevant to the task DESCRIPTION, with the hub's reasons.
With a prefix argument, CURRENT-FILE-IS-TARGET: the current file is a
target (and so is left out of the list)."
  (interactive (list (read-string "Task: ") current-prefix-arg))
  (let* ((server (lsp-hub--server))
         (root (lsp-hub--root server))
         (argument (list :description description :topN 10))
         (argument (if (and current-file-is-target (buffer-file-name))
                       (append argument (list :targets (vector (lsp-hub--uri))))
                     argument))
         (result (lsp-hub-execute "lspHub.relevantFiles" argument server))
         (lines (mapcar (lambda (file)
                          (format "%s:1:1: %.2f %s" (file-relative-name (lsp-hub--file (plist-get file :path) root)
                                                                        root)
                                  (plist-get file :score)
                                  (string-join (append (plist-get file :reasons) nil) "; ")))
                        (plist-get result :files)))
         (note (lsp-hub--incomplete-note result)))
    (lsp-hub--grep-buffer "*lsp-hub relevant*"
                          (format "Files relevant to: %s%s" description (if note (format " (%s)" note) ""))
                          lines root)))

(defun lsp-hub--location-line (location text root)
  "\"file:line:col: TEXT\" for the LSP LOCATION, the file relative to ROOT."
  (let ((start (plist-get (plist-get location :range) :start)))
    (format "%s:%d:%d: %s" (file-relative-name (lsp-hub--file (plist-get location :uri) root) root)
            (1+ (plist-get start :line)) (1+ (plist-get start :character)) text)))

;;;###autoload
(defun lsp-hub-callers (&optional depth)
  "List the callers of the symbol at point.
With a prefix argument, callers of callers up to DEPTH levels."
  (interactive (list (when current-prefix-arg (prefix-numeric-value current-prefix-arg))))
  (let* ((server (lsp-hub--server))
         (root (lsp-hub--root server))
         (result (lsp-hub-execute "lspHub.callers"
                                  (list :uri (lsp-hub--uri) :position (lsp-hub--position) :depth (or depth 1))
                                  server))
         (symbol (or (lsp-hub--null (plist-get result :symbol)) "?"))
         (lines (mapcar (lambda (call)
                          (lsp-hub--location-line (plist-get call :location)
                                                  (or (lsp-hub--null (plist-get call :caller)) "<top level>")
                                                  root))
                        (plist-get result :callers)))
         (note (lsp-hub--incomplete-note result)))
    (if (null lines)
        (message "lsp-hub: no callers of %s found%s" symbol (if note (format " (%s)" note) ""))
      (lsp-hub--grep-buffer "*lsp-hub callers*"
                            (format "Callers of %s%s" symbol (if note (format " (%s)" note) "")) lines root))))

;;;###autoload
(defun lsp-hub-syntax-check ()
  "Check the syntax of this buffer with the hub's tree-sitter parsers."
  (interactive)
  (let* ((server (lsp-hub--server))
         (root (lsp-hub--root server))
         (uri (lsp-hub--uri))
         (argument (list :uri uri))
         (argument (if (eglot-managed-p) argument
                     (append argument (list :text (buffer-substring-no-properties (point-min) (point-max))))))
         (result (lsp-hub-execute "lspHub.syntaxCheck" argument server))
         (name (file-relative-name (buffer-file-name) root))
         (errors (append (plist-get result :errors) nil)))
    (cond ((eq (plist-get result :checked) :json-false)
           (message "lsp-hub: syntax of %s not checked: %s" name (plist-get result :reason)))
          ((null errors)
           (message "lsp-hub: no syntax errors in %s (%s)" name (plist-get result :language)))
          (t (lsp-hub--grep-buffer
              "*lsp-hub syntax*" (format "Syntax errors in %s" name)
              (mapcar (lambda (problem)
                        (lsp-hub--location-line (list :uri uri :range (plist-get problem :range))
                                                (plist-get problem :message) root))
                      errors)
              root)))))

(provide 'lsp-hub)
;;; lsp-hub.el ends here
