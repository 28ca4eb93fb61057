"""The demo: everything on this machine, one command (``moa-chat --demo``).

demo.py          Demo: the verifier process + the link shaper; DemoOptions; the verifier's command
verifier.py      VerifierProcess: spawn, wait until it listens, notice a crash, restart
link_control.py  LinkControl: switch the shaper by preset name (the UI's network toggle)
tether.py        no child left behind: process group, atexit, PR_SET_PDEATHSIG
errors.py        DemoError
"""

from app.demo.demo import Demo, DemoOptions, verifier_command
from app.demo.errors import DemoError
from app.demo.link_control import LinkControl
from app.demo.verifier import VerifierProcess, VerifierState, VerifierStatus

__all__ = [
    "Demo",
    "DemoError",
    "DemoOptions",
    "LinkControl",
    "VerifierProcess",
    "VerifierState",
    "VerifierStatus",
    "verifier_command",
]
