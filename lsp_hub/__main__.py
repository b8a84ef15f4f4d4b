from lsp_hub.cli import main

raise SystemExit(main())
