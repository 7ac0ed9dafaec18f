import sys

from .cli import main
from .parent_watch import start_parent_watch

start_parent_watch()
sys.exit(main())
