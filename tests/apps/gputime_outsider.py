#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""gputime_outsider.py DIR: a traced process that names --gpu-time's abstract socket
(GPUPROBE_GPUTIME_SOCK, which anyone can find in /proc/net/unix) in DIR/sock for a process
gpuprobe does not follow, waits for DIR/done (that process has sent its records), then sends
good records of its own on a connection of its own. Prints its account as the last JSON line
on stderr: pid, sent (its one-kernel records)."""
import json, os, socket, struct, sys, time

MAGIC, VERSION, KERNEL = 0x31545047, 1, 3
d = sys.argv[1]
name = os.environ["GPUPROBE_GPUTIME_SOCK"]


def kernel_dgram(dur):
    rec = struct.pack("<HHI QQ I 3I 3I 3I", KERNEL, 64, 0, 1000, 1000 + dur, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0)
    return struct.pack("<IHH", MAGIC, VERSION, 1) + rec


with open(os.path.join(d, "sock.tmp"), "w") as f:
    f.write(name)
os.rename(os.path.join(d, "sock.tmp"), os.path.join(d, "sock"))
deadline = time.time() + 30
while not os.path.exists(os.path.join(d, "done")) and time.time() < deadline:
    time.sleep(0.02)
c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
c.connect("\0" + name[1:] if name.startswith("@") else name)
sent = 0
for _ in range(5):
    c.send(kernel_dgram(321))
    sent += 1
time.sleep(0.3)  # gpuprobe reads every 20 ms
print(json.dumps({"pid": os.getpid(), "api": "gputime_outsider", "sent": sent}), file=sys.stderr)
