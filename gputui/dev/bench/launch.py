"""A tiny launcher that times one command and reports that command's own peak RSS.

Run as a script (`python -I -S launch.py FD CMD...`), never imported by the benchmark's parent.
Linux carries a process's peak RSS across fork and exec: a child forked from the benchmark (a
~170 MB Python process) reports at least the parent's size, so `kubectl describe` and `gputui
diagnose` used to show the same 172.9 MB. Forked from this ~9 MB process instead, a command's
`ru_maxrss` is its own peak (exact whenever it exceeds the launcher's few MB). The wall time is
taken here too, around fork and wait, so the launcher's own start-up is not counted.

Writes `spawned_at wall_s maxrss_kb status` on file descriptor FD when the command has exited.
"""

import os
import sys
import time


def main() -> None:
    fd = int(sys.argv[1])
    cmd = sys.argv[2:]
    spawned_at = time.time()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(fd)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _pid, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    os.write(fd, f"{spawned_at!r} {wall!r} {usage.ru_maxrss} {status}\n".encode())
    os.close(fd)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
