import sys
from pathlib import Path

# The harness is a helper module next to the tests, not a package.
sys.path.insert(0, str(Path(__file__).parent))
