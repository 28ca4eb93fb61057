"""Runs in the frozen app before its own code: point native libraries at the bundle.

llama-cpp-python finds ``libllama`` through ``LLAMA_CPP_LIB_PATH`` (llama-cpp-python #1475); the
bundle holds every model it needs, so the Hugging Face hub is never asked for one.
"""

import os
import sys

_bundle = getattr(sys, "_MEIPASS", os.path.dirname(sys.executable))
os.environ.setdefault("LLAMA_CPP_LIB_PATH", os.path.join(_bundle, "llama_cpp", "lib"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
