import sys

from app.bench.cli import main

sys.exit(main())
