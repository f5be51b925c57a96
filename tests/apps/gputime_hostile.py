#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""gputime_hostile.py: a traced process that attacks --gpu-time's channel (the socket it
inherits, GPUPROBE_GPUTIME_FD) and prints its own account as the last JSON line on stderr:
  oversized       datagrams longer than the limit (sent: gpuprobe must refuse each)
  malformed       datagrams of a wrong magic (sent)
  lie             whether a child running as nobody could send with another PID's
                  credentials (the kernel must refuse: EPERM)
  child_pid       that child, which then sends good records as itself
  flood_sent      valid one-kernel datagrams the socket took in a burst, flood_refused those
                  it did not (EAGAIN); gpuprobe must count each taken one, read or flood
"""
import json, os, socket, struct, sys

MAGIC, VERSION, KERNEL = 0x31545047, 1, 3
fd = int(os.environ["GPUPROBE_GPUTIME_FD"])
s = socket.socket(fileno=os.dup(fd))
flood = int(sys.argv[1]) if len(sys.argv) > 1 else 20000


def kernel_dgram(dur):
    rec = struct.pack("<HHI QQ I 3I 3I 3I", KERNEL, 64, 0, 1000, 1000 + dur, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0)
    return struct.pack("<IHH", MAGIC, VERSION, 1) + rec


truth = {"pid": os.getpid(), "api": "gputime_hostile"}
truth["oversized"] = 0
try:
    s.send(b"\0" * 9000)
    truth["oversized"] += 1
except OSError:
    pass
truth["malformed"] = 0
for _ in range(3):
    s.send(struct.pack("<IHH", 0xdeadbeef, VERSION, 0) + b"x" * 24)
    truth["malformed"] += 1

# a child that drops to nobody and claims PID 1's credentials
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.close(r)
    os.setgid(65534)
    os.setuid(65534)
    try:
        creds = struct.pack("iII", 1, 65534, 65534)
        s.sendmsg([kernel_dgram(777)], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, creds)])
        lie = "sent"
    except PermissionError:
        lie = "refused"
    for _ in range(5):
        s.send(kernel_dgram(555))
    os.write(w, lie.encode())
    os._exit(0)
os.close(w)
truth["lie"] = os.read(r, 16).decode()
os.waitpid(child, 0)
truth["child_pid"] = child
truth["child_sent"] = 5

sent = refused = 0
for _ in range(flood):
    try:
        s.send(kernel_dgram(100), socket.MSG_DONTWAIT)
        sent += 1
    except BlockingIOError:
        refused += 1
truth["flood_sent"] = sent
truth["flood_refused"] = refused
print(json.dumps(truth), file=sys.stderr)
