"""``python -m mcudeploy`` is the ``mcudeploy`` command."""
import sys

from .cli.main import main

sys.exit(main())
