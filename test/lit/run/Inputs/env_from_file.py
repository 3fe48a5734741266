"""env_from_file.py VAR FILE COMMAND...: runs COMMAND with the environment
variable VAR set to FILE's contents (stripped), for a value an earlier RUN
line computed: lit's shell has no command substitution."""
import os
import sys

var, path, command = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(path) as h:
    os.environ[var] = h.read().strip()
os.execvp(command[0], command)
