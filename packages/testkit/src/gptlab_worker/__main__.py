"""Start the worker: `python -I -S -B <folder of gptlab_worker> FD_IN FD_OUT REFUSED SITE_DIR...`.

Run as a folder, Python puts the folder itself first on the path; its parent goes there
instead, so that the worker's modules import as the package they are (`gptlab_worker.wire`)
and none of them answers a candidate's plain `import wire`.
"""

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parent.parent)

from gptlab_worker.serve import main  # noqa: E402  (the path above first)

main(sys.argv[1:])
