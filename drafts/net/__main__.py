from drafts.net.cli import main

raise SystemExit(main())
