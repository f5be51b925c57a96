#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""gputime_hog.py: a traced process whose child, as nobody, tries to hold every connection of
--gpu-time's abstract socket (its name, GPUPROBE_GPUTIME_SOCK, is listed in /proc/net/unix
for anyone to find), then connects itself and sends good records. Prints its account as the
last JSON line on stderr:
  hog_connects  connections the nobody child made (each accepted by the kernel's backlog)
  pid, sent     this process and the one-kernel records it sent on its own connection
"""
import json, os, resource, socket, struct, sys, time

MAGIC, VERSION, KERNEL = 0x31545047, 1, 3
name = os.environ["GPUPROBE_GPUTIME_SOCK"]
addr = "\0" + name[1:] if name.startswith("@") else name
hog = int(sys.argv[1]) if len(sys.argv) > 1 else 1100


def kernel_dgram(dur):
    rec = struct.pack("<HHI QQ I 3I 3I 3I", KERNEL, 64, 0, 1000, 1000 + dur, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0)
    return struct.pack("<IHH", MAGIC, VERSION, 1) + rec


def connect():
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(addr)  # blocking: a full backlog waits for gpuprobe's next accept (a timeout would be EAGAIN)
    return c


resource.setrlimit(resource.RLIMIT_NOFILE, (hog + 64, max(hog + 64, resource.getrlimit(resource.RLIMIT_NOFILE)[1])))
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.close(r)
    os.setgid(65534)
    os.setuid(65534)
    held = []
    for _ in range(hog):
        try:
            held.append(connect())
        except OSError:
            break
    time.sleep(0.5)  # gpuprobe accepts every 20 ms: all of them taken or refused by now
    os.write(w, str(len(held)).encode())
    time.sleep(30)  # held until killed
    os._exit(0)
os.close(w)
n = int(os.read(r, 16).decode() or 0)
me = connect()
sent = 0
for _ in range(5):
    me.send(kernel_dgram(321))
    sent += 1
time.sleep(0.5)
os.kill(child, 9)
os.waitpid(child, 0)
print(json.dumps({"pid": os.getpid(), "api": "gputime_hog", "hog_connects": n, "sent": sent}), file=sys.stderr)
