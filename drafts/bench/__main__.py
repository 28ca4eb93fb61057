from drafts.bench.cli import main

raise SystemExit(main())
