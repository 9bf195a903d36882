"""How a monitored script can end: the bootstrap must keep each outcome as plain Python would."""
import atexit
import sys

atexit.register(lambda: print("atexit ran"))
sys.stdout.write("unflushed output")  # no newline: still in the buffer when the script ends
mode = sys.argv[1]
if mode == "message":
    sys.exit("bad input")
if mode == "code":
    sys.exit(3)
if mode == "raise":
    raise KeyError("missing")
