import sys

from .cli import main
from .parent_watch import start_parent_watch

# serve reads its requests from stdin and exits when it closes; the watch would consume them.
if sys.argv[1:2] != ["serve"]:
    start_parent_watch()
sys.exit(main())
