# SPDX-License-Identifier: BSD-3-Clause
"""Standing attack tests (issue 12): files a traced process names cannot attack a root
gpuprobe. A `nobody` process in a user namespace maps a library in a folder it owns,
chroots into it and plants, at the path gpuprobe looks at (its root + the path in its
maps), a FIFO, an absolute symlink to a root-only driver, a link to a folder outside
(the by-name walk would leave its root, the check inside it would not), or maps a sparse
crafted ELF. The real gpuprobe, with real BPF, in node-wide mode, with -p, and as
`gpuprobe daemon` (its rescan), both with CAP_SYS_ADMIN (files opened through
/proc/PID/map_files) and without (by path inside the process's root). Also: a symlinked
--trace file in a 1777 folder, and uprobes attached through /proc/self/fd/N."""
import json
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

import gp
from gp import FAKECUDA, FAKECUDA_DIR, GPUPROBE, app, check, eq, final, proc, truth

NOBODY = 65534
ENV = {"LD_LIBRARY_PATH": FAKECUDA_DIR}  # a usable driver for node-wide runs
# the two ways a mapped file is opened: the mapping itself (root), by path inside the
# process's root (the hardened service: no CAP_SYS_ADMIN, so no map_files)
ROUTES = {
    "map_files": [],
    "in-root path": ["setpriv", "--bounding-set=-sys_admin,-checkpoint_restore"],
}
# Peak RSS is bounded against a baseline taken in the same run, the same command without
# the attacker, moments before: node-wide, gpuprobe reads every libcuda the node maps, so
# its size follows what else runs (a busy machine: 220 MiB). A file that got parsed for
# the 6 GiB its .dynsym claims would be gigabytes over it.
RSS_MARGIN_KB = 128 * 1024


def rss_limit_kb(base_kb):
    return 2 * base_kb + RSS_MARGIN_KB

# Runs as nobody in a user namespace: maps its library, chroots into its folder and
# plants at the name gpuprobe will look at. Everything is imported before the chroot.
ATTACKER = r"""
import mmap, os, sys
root, plant, secret = sys.argv[1], sys.argv[2], sys.argv[3]
lib = root + "/lib/libcuda.so.1"
f = open(lib, "rb")
m = mmap.mmap(f.fileno(), min(os.fstat(f.fileno()).st_size, 1 << 20),
              flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
os.chroot(root)
os.chdir("/")
# gpuprobe sees the file as `lib` in our maps and looks for it in our root
seen = lib
os.makedirs(os.path.dirname(seen), exist_ok=True)
if plant == "fifo":
    os.mkfifo(seen)
elif plant == "symlink":
    os.symlink(secret, seen)
elif plant == "hardlink":
    # our mapped file under the name gpuprobe looks for, too
    os.link("/lib/libcuda.so.1", seen)
elif plant == "linkdir":
    # `seen`'s folder is a link to the secret's folder, where we keep our mapped file
    # again (a hard link): inside our root the name leads to the mapped inode, walked
    # from gpuprobe's root it would lead to the secret
    os.makedirs(os.path.dirname(secret))
    os.link("/lib/libcuda.so.1", secret)
    os.rmdir(os.path.dirname(seen))
    os.symlink(os.path.dirname(secret), os.path.dirname(seen))
print("READY", os.getpid(), flush=True)
sys.stdin.read()
"""


def crafted_elf(path):
    """The audit's file: the stand-in driver, its .dynsym claiming 6 GiB, 8 GiB sparse."""
    shutil.copyfile(FAKECUDA, path)
    with open(path, "r+b") as f:
        b = bytearray(f.read())
        shoff = struct.unpack_from("<Q", b, 0x28)[0]
        shentsize, shnum = struct.unpack_from("<HH", b, 0x3a)
        patched = 0
        for i in range(shnum):
            o = shoff + i * shentsize
            if struct.unpack_from("<I", b, o + 4)[0] == 11:  # SHT_DYNSYM
                struct.pack_into("<Q", b, o + 0x20, 6 << 30)
                patched += 1
        eq(patched, 1, "dynsym sections patched")
        f.seek(0)
        f.write(b)
    os.truncate(path, 8 << 30)
    st = os.stat(path)
    check(st.st_blocks * 512 < (1 << 20), f"crafted file holds {st.st_blocks * 512} bytes")


class Attack:
    """A chroot folder owned by nobody, a root-only driver outside it, the attacker."""

    def __init__(self, plant, crafted=False):
        self.top = tempfile.mkdtemp(prefix="gp-attack-")
        os.chmod(self.top, 0o755)  # nobody goes through, to its folder
        self.root = os.path.join(self.top, "root")
        os.makedirs(os.path.join(self.root, "lib"))
        self.lib = os.path.join(self.root, "lib", "libcuda.so.1")
        if crafted:
            crafted_elf(self.lib)
        else:
            shutil.copyfile(FAKECUDA, self.lib)
        for d, _, files in os.walk(self.root):
            os.chown(d, NOBODY, NOBODY)
            for f in files:
                os.chown(os.path.join(d, f), NOBODY, NOBODY)
        os.chmod(self.lib, 0o755)
        # a valid driver only root may read: nothing may be parsed or probed through it
        sdir = os.path.join(self.top, "secret")
        os.mkdir(sdir, 0o700)
        self.secret = os.path.join(sdir, "libcuda.so.1")
        shutil.copyfile(FAKECUDA, self.secret)
        os.chmod(self.secret, 0o600)
        self.secret_bytes = open(self.secret, "rb").read()
        self.ino = os.stat(self.lib).st_ino
        self.p = subprocess.Popen(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             "unshare", "-U", "-r", "python3", "-c", ATTACKER, self.root, plant, self.secret],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd="/")
        line = self.p.stdout.readline()
        if not line.startswith("READY"):
            err = self.p.stderr.read() if self.p.poll() is not None else ""
            self.stop()
            raise gp.Failure(f"attacker did not start: {line!r} {err}")
        self.pid = int(line.split()[1])
        with open(f"/proc/{self.pid}/maps") as f:
            check(self.lib in f.read(), f"attacker maps {self.lib}")
        # what gpuprobe looks at: the process's root + the path in its maps
        self.seen = f"/proc/{self.pid}/root{self.lib}"

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        for s in (self.p.stdout, self.p.stdin, self.p.stderr):
            s.close()
        # the root-only driver is untouched
        if os.path.exists(self.secret):
            check(open(self.secret, "rb").read() == self.secret_bytes, "secret driver changed")
        shutil.rmtree(self.top, ignore_errors=True)


# the dynamic linker's debugger hook (src/core/libwatch.c, libraries loaded later): a file
# of the host's that gpuprobe picks itself, not one a traced process names
LINKERS = {os.path.realpath(p) for p in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1")
           if os.path.exists(p)}


def _uprobe_multi_info(link_id):
    """(path, count) of uprobe_multi link link_id from the kernel's link info
    (BPF_OBJ_GET_INFO_BY_FD, Linux 6.8): the fdinfo names the path only from 6.17 on."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    nr_bpf = {"x86_64": 321, "aarch64": 280}[os.uname().machine]
    BPF_OBJ_GET_INFO_BY_FD, BPF_LINK_GET_FD_BY_ID = 15, 30
    attr = (ctypes.c_uint8 * 128)()
    ctypes.c_uint32.from_buffer(attr, 0).value = link_id
    fd = libc.syscall(nr_bpf, BPF_LINK_GET_FD_BY_ID, ctypes.byref(attr), 128)
    if fd < 0:
        raise OSError(ctypes.get_errno(), f"BPF_LINK_GET_FD_BY_ID {link_id}")
    try:
        # struct bpf_link_info: type, id, prog_id, then (8-aligned) uprobe_multi's path,
        # offsets, ref_ctr_offsets, cookies (pointers), path_size, count, flags, pid
        info = (ctypes.c_uint8 * 256)()
        path = ctypes.create_string_buffer(4096)
        ctypes.c_uint64.from_buffer(info, 16).value = ctypes.addressof(path)
        ctypes.c_uint32.from_buffer(info, 48).value = len(path)
        attr = (ctypes.c_uint8 * 128)()
        ctypes.c_uint32.from_buffer(attr, 0).value = fd
        ctypes.c_uint32.from_buffer(attr, 4).value = len(info)
        ctypes.c_uint64.from_buffer(attr, 8).value = ctypes.addressof(info)
        if libc.syscall(nr_bpf, BPF_OBJ_GET_INFO_BY_FD, ctypes.byref(attr), 128) < 0:
            raise OSError(ctypes.get_errno(), f"BPF_OBJ_GET_INFO_BY_FD on link {link_id}")
        return path.value.decode(errors="replace"), ctypes.c_uint32.from_buffer(info, 52).value
    finally:
        os.close(fd)


def uprobe_links(pid):
    """(link_type, path, probes) of every uprobe link process pid holds (fdinfo, or the
    link's info where the fdinfo does not name the path), but the linker hook's."""
    out = []
    d = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(d):
        try:
            with open(f"{d}/{fd}") as f:
                info = dict(l.split(":", 1) for l in f.read().splitlines()
                            if ":" in l and not l.startswith(("cookie", "\t")))
        except OSError:
            continue
        t = info.get("link_type", "").strip()
        if t in ("uprobe_multi", "uretprobe_multi"):
            if "path" in info:
                path, cnt = info["path"].strip(), int(info["uprobe_cnt"])
            else:
                path, cnt = _uprobe_multi_info(int(info["link_id"]))
            if path not in LINKERS:
                out.append(("uprobe_multi", path, cnt))
        elif t == "perf":
            out.append((t, None, 1))
    return out


def open_files(pid):
    """What process pid has open, by name."""
    names = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            names.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return names


def vmhwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Run:
    """gpuprobe run to its end: exit status, output, seconds, peak RSS (VmHWM sampled
    while it ran and the kernel's ru_maxrss at its exit), its uprobe links and open files
    once it said it traces."""

    def __init__(self, args, prefix=(), env=None, timeout=30, pass_fds=()):
        e = dict(os.environ)
        e.update(env or {})
        out, err = gp.capture_file(), gp.capture_file()
        t0 = time.time()
        p = subprocess.Popen([*prefix, GPUPROBE, *args], stdout=out, stderr=err, env=e,
                             text=True, pass_fds=pass_fds)
        self.hwm_kb, self.links, self.files = 0, None, set()
        status = None
        while time.time() - t0 < timeout:
            self.hwm_kb = max(self.hwm_kb, vmhwm_kb(p.pid))
            if self.links is None:
                err.flush()
                err.seek(0)
                if "gpuprobe: tracing" in err.read():
                    self.links, self.files = uprobe_links(p.pid), open_files(p.pid)
            wpid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if wpid:
                break
            time.sleep(0.02)
        else:
            p.kill()
            os.wait4(p.pid, 0)
            raise gp.Failure(f"gpuprobe {' '.join(args)} still running after {timeout} s")
        p.returncode = os.waitstatus_to_exitcode(status)
        self.seconds = time.time() - t0
        self.maxrss_kb = ru.ru_maxrss
        self.rc = self.returncode = p.returncode
        out.seek(0)
        err.seek(0)
        self.stdout, self.stderr = out.read(), err.read()
        out.close()
        err.close()

    def peak_kb(self):
        return max(self.maxrss_kb, self.hwm_kb)

    def check_rss(self, base):
        """Peak RSS within rss_limit_kb of base (a Run of the same command without the
        attacker, just before)."""
        limit = rss_limit_kb(base.peak_kb())
        check(self.maxrss_kb < limit, f"peak RSS {self.maxrss_kb} KiB (ru_maxrss), baseline {base.peak_kb()} KiB")
        check(self.hwm_kb < limit, f"peak RSS {self.hwm_kb} KiB (VmHWM), baseline {base.peak_kb()} KiB")


def lines_naming(text, name):
    return [l for l in text.splitlines() if name in l]


def check_links(links, a, what):
    """Probes only on the inode the attacker maps, none on the root-only driver."""
    check(links, f"{what}: no uprobe links")
    for t, path, _ in links:
        if t != "uprobe_multi":
            continue
        check(path != a.secret, f"{what}: probes on the root-only driver {a.secret}")
        if path.startswith(a.root):
            eq(os.stat(path).st_ino, a.ino, f"{what}: inode of the probed {path}")


def need_uprobe_multi():
    """These tests read which file each probe is on from the uprobe_multi links' fdinfo
    (their path); a perf-event uprobe's link does not say, and without CAP_SYS_ADMIN (the
    in-root route) the kernel refuses perf-event uprobes, as gpuprobe's error says."""
    if not gp.has_uprobe_multi():
        gp.skip("no uprobe_multi links here (Linux 6.6): perf-event uprobe links do not name the probed "
                "file, and the in-root route (no CAP_SYS_ADMIN) cannot attach them")


# ---- node-wide CLI ----

def node_wide(plant, route, crafted=False):
    need_uprobe_multi()
    args = ["--memleak", "-d", "2", "-v"]
    base = Run(args, prefix=ROUTES[route], env=ENV)
    eq(base.rc, 0, f"baseline exit status ({base.stderr[-1500:]})")
    a = Attack(plant, crafted)
    try:
        r = Run(args, prefix=ROUTES[route], env=ENV)
        eq(r.rc, 0, f"exit status ({r.stderr[-1500:]})")
        # against the same run without the attacker, just before: a busy node's other
        # libcuda copies slow both (a hang on a FIFO would run into Run's timeout)
        check(r.seconds < 2 * base.seconds + 5, f"a 2 s run took {r.seconds:.1f} s, {base.seconds:.1f} s without the attacker")
        check(a.secret not in r.stderr, f"the root-only driver named: {r.stderr[-1500:]}")
        check(a.secret not in r.files, "the root-only driver open")
        check_links(r.links, a, route)
        r.check_rss(base)
        return a, r
    finally:
        a.stop()


def test_node_wide_fifo():
    for route in ROUTES:
        a, r = node_wide("fifo", route)
        if route == "in-root path":
            eq(lines_naming(r.stderr, a.seen), [f"gpuprobe: skipping {a.seen}: not a regular file"],
               f"{route}: lines naming the FIFO")


def test_node_wide_symlink():
    for route in ROUTES:
        a, r = node_wide("symlink", route)
        if route == "in-root path":
            eq(lines_naming(r.stderr, a.seen),
               [f"gpuprobe: skipping {a.seen}: No such file or directory"],
               f"{route}: lines naming the symlink")


def test_node_wide_link_to_folder_outside():
    for route in ROUTES:
        a, r = node_wide("linkdir", route)
        ours = {p for t, p, _ in r.links if t == "uprobe_multi" and p.startswith(a.root)}
        eq(len(ours), 1, f"{route}: probes on the attacker's file, by one name: {ours}")


def test_node_wide_sparse_elf():
    for route in ROUTES:
        a, r = node_wide("hardlink", route, crafted=True)
        named = lines_naming(r.stderr, a.seen)
        eq(len(named), 1, f"{route}: lines naming the crafted file: {named}")
        check(".dynsym claims 6.0 GiB, larger than the file's data" in named[0], named[0])


# ---- -p PID ----

def test_pid_fifo():
    need_uprobe_multi()
    for route in ROUTES:
        a = Attack("fifo")
        try:
            r = Run(["--memleak", "-p", str(a.pid), "-d", "1"], prefix=ROUTES[route])
            check(r.seconds < 8, f"{route}: took {r.seconds:.1f} s")
            if route == "map_files":
                # the mapping itself: the attacker's own driver copy is what is probed
                eq(r.rc, 0, f"{route}: exit ({r.stderr[-800:]})")
                check_links(r.links, a, route)
                # 19 entry and 19 return probes, as on the stand-in driver
                eq(sum(n for t, p, n in r.links if p == a.lib), 38, f"{route}: probes on its file")
            else:
                gp.one_error_line(r, f"no usable libcuda found ({a.seen}: not a regular file)")
        finally:
            a.stop()


def test_pid_symlink():
    need_uprobe_multi()
    for route in ROUTES:
        a = Attack("symlink")
        try:
            r = Run(["--memleak", "-p", str(a.pid), "-d", "1", "-v"], prefix=ROUTES[route])
            check(a.secret not in r.stderr, f"{route}: the root-only driver named")
            if route == "map_files":
                eq(r.rc, 0, f"{route}: exit ({r.stderr[-800:]})")
                check_links(r.links, a, route)
                check(all(p == a.lib for t, p, _ in r.links if t == "uprobe_multi"),
                      f"{route}: links {r.links}")
            else:
                eq(r.rc, 1, f"{route}: exit")
                check(f"no usable libcuda found ({a.seen}: No such file or directory)" in r.stderr,
                      r.stderr)
        finally:
            a.stop()


def test_pid_link_to_folder_outside():
    need_uprobe_multi()
    for route in ROUTES:
        a = Attack("linkdir")
        try:
            r = Run(["--memleak", "-p", str(a.pid), "-d", "1", "-v"], prefix=ROUTES[route])
            eq(r.rc, 0, f"{route}: exit ({r.stderr[-800:]})")
            check(a.secret not in r.files, f"{route}: the root-only driver open")
            check_links(r.links, a, route)
            paths = {p for t, p, _ in r.links if t == "uprobe_multi"}
            # through map_files the mapping's own name; by path, the hard link inside the root
            want = a.lib if route == "map_files" else a.root + a.secret
            eq(paths, {want}, f"{route}: where the probes are")
            # by-path front ends are given the descriptor, not the name with the link in it
            check(f"on {a.seen}" not in r.stderr, f"{route}: announced by name: {r.stderr[-600:]}")
        finally:
            a.stop()


def test_pid_sparse_elf():
    need_uprobe_multi()
    for route in ROUTES:
        # the baseline: the same -p run on an attacker mapping the plain stand-in
        a = Attack("hardlink")
        try:
            base = Run(["--memleak", "-p", str(a.pid), "-d", "1"], prefix=ROUTES[route])
            eq(base.rc, 0, f"{route}: baseline exit ({base.stderr[-800:]})")
        finally:
            a.stop()
        a = Attack("hardlink", crafted=True)
        try:
            r = Run(["--memleak", "-p", str(a.pid), "-d", "1"], prefix=ROUTES[route])
            check(r.seconds < 2 * base.seconds + 3, f"{route}: took {r.seconds:.1f} s, {base.seconds:.1f} s on the plain file")
            r.check_rss(base)
            gp.one_error_line(r, f"no usable libcuda found ({a.seen}: .dynsym claims 6.0 GiB, "
                                 "larger than the file's data (")
        finally:
            a.stop()


# ---- gpuprobe daemon ----

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def healthz(port, timeout=1):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=timeout) as r:
        return r.status


def healthz_limit(port, d, rescans=2):
    """How long /healthz may take while the attacker is there: a second, or three times its
    slowest answer over two rescans of the same daemon before the attacker came (an emulated
    arm64 VM answers in 0.3 s at times; a daemon stuck on a FIFO does not answer at all)."""
    slowest, before = 0.0, d.stderr().count("rescan:")
    deadline = time.time() + 10
    while d.stderr().count("rescan:") < before + rescans and time.time() < deadline:
        t0 = time.time()
        eq(healthz(port, timeout=10), 200, "/healthz before the attacker")
        slowest = max(slowest, time.time() - t0)
        time.sleep(0.1)
    return max(1.0, 3 * slowest)


def daemon_with(plant, route, crafted=False):
    """A daemon that rescans every 0.3 s, an attacker appearing after it started; returns
    the daemon's stderr once two rescans saw the attacker, /healthz answering throughout."""
    port = free_port()
    d = gp.Background([*ROUTES[route], GPUPROBE, "daemon", "--memleak", "-v", "--listen",
                       f"127.0.0.1:{port}", "--rescan-interval", "0.3"], env=ENV)
    a = None
    try:
        d.wait_for("listening on", where="stderr")
        base_kb = vmhwm_kb(d.pid)  # the same daemon before the attacker came
        limit = healthz_limit(port, d)
        a = Attack(plant, crafted)
        before = d.stderr().count("rescan:")
        deadline = time.time() + 10
        while d.stderr().count("rescan:") < before + 2:
            t0 = time.time()
            eq(healthz(port, timeout=limit), 200, f"{route}: /healthz")
            check(time.time() - t0 < limit, f"{route}: /healthz took {time.time() - t0:.1f} s (limit {limit:.1f} s)")
            check(time.time() < deadline, f"{route}: no two rescans in 10 s: {d.stderr()[-800:]}")
            time.sleep(0.1)
        for _ in range(5):
            eq(healthz(port), 200, f"{route}: /healthz after the rescans")
        err = d.stderr()
        check(a.secret not in err, f"{route}: the root-only driver named")
        check(a.secret not in open_files(d.pid), f"{route}: the root-only driver open")
        links = uprobe_links(d.pid)
        for t, path, _ in links:
            check(path != a.secret, f"{route}: probes on the root-only driver")
        hwm = vmhwm_kb(d.pid)
        check(0 < hwm < rss_limit_kb(base_kb), f"{route}: daemon VmHWM {hwm} KiB, {base_kb} KiB before the attacker")
        d.signal(signal.SIGTERM)
        eq(d.wait(), 0, f"{route}: daemon exit")
        return a, err, links
    finally:
        if a:
            a.stop()
        d.kill()


def test_daemon_fifo():
    for route in ROUTES:
        a, err, _ = daemon_with("fifo", route)
        check(f"probing {a.seen}" not in err, f"{route}: probed the FIFO's name")


def test_daemon_symlink():
    for route in ROUTES:
        daemon_with("symlink", route)


def test_daemon_link_to_folder_outside():
    for route in ROUTES:
        a, err, links = daemon_with("linkdir", route)
        check(f"probing {a.seen} " not in err, f"{route}: probed by a name with a link in it")


def test_daemon_sparse_elf():
    for route in ROUTES:
        a, err, _ = daemon_with("hardlink", route, crafted=True)
        named = lines_naming(err, a.seen)
        eq(len(named), 1, f"{route}: lines naming the crafted file: {named}")
        check(".dynsym claims 6.0 GiB, larger than the file's data" in named[0], named[0])


# ---- output files ----

def test_trace_symlink_in_shared_folder():
    top = tempfile.mkdtemp(prefix="gp-attack-out-")
    try:
        os.chmod(top, 0o755)
        shared = os.path.join(top, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o1777)
        target = os.path.join(top, "root-owned.conf")
        with open(target, "w") as f:
            f.write("precious\n")
        os.chmod(target, 0o644)
        link = os.path.join(shared, "trace.json")
        # nobody plants it (a process of theirs could as well)
        subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                        "ln", "-s", target, link], check=True)
        r = gp.gpuprobe(["--trace", link, "--libcuda", FAKECUDA, "-d", "0.2"])
        eq(r.returncode, 1, f"exit status ({r.stderr})")
        check(link in r.stderr, r.stderr)
        eq(open(target).read(), "precious\n", "the link's target")
        eq(os.stat(target).st_size, 9, "its size")
        # a name nobody planted: created, 0600, whatever the umask
        ours = os.path.join(shared, "ours.json")
        old = os.umask(0)
        try:
            r = gp.gpuprobe(["--trace", ours, "--libcuda", FAKECUDA, "-d", "0.2"])
        finally:
            os.umask(old)
        eq(r.returncode, 0, f"exit status ({r.stderr})")
        eq(os.stat(ours).st_mode & 0o7777, 0o600, "mode of a created trace")
    finally:
        shutil.rmtree(top, ignore_errors=True)


# ---- probes attached through /proc/self/fd/N ----

def test_attach_through_proc_self_fd():
    """A descriptor handed down as /proc/self/fd/N: uprobes placed through that link bind
    to the file's inode and fire for a process that maps it by its normal path, with
    uprobe_multi and with perf-event uprobes (only those where the kernel has no
    uprobe_multi)."""
    for multi in ("0", "1") if gp.has_uprobe_multi() else ("1",):
        what = "perf-event uprobes" if multi == "1" else "uprobe_multi"
        a = gp.start_app([app("memleak_app"), "--wait", "--allocs", "9", "--leaks", "4"],
                         env=ENV)
        fd = os.open(FAKECUDA, os.O_RDONLY)
        try:
            pid = int(a.stdout().split("READY")[1].split()[0])
            out = gp.capture_file()
            err = gp.capture_file()
            g = subprocess.Popen([GPUPROBE, "--memleak", "--json", "-p", str(pid), "--libcuda",
                                  f"/proc/self/fd/{fd}"], stdout=out, stderr=err, text=True,
                                 pass_fds=(fd,), env=dict(os.environ, GPUPROBE_NO_UPROBE_MULTI=multi))
            deadline = time.time() + 20
            while True:
                err.seek(0)
                text = err.read()
                if "gpuprobe: tracing" in text or g.poll() is not None:
                    break
                check(time.time() < deadline, f"{what}: gpuprobe did not start")
                time.sleep(0.02)
            check("probes on /proc/self/fd/" in text, f"{what}: {text}")
            links = uprobe_links(g.pid)
            if multi == "0":
                paths = {p for t, p, _ in links if t == "uprobe_multi"}
                eq(paths, {os.path.realpath(FAKECUDA)}, f"{what}: the kernel's name of the probed file")
            else:
                check(links and all(t == "perf" for t, _, _ in links), f"{what}: {links}")
            os.kill(pid, signal.SIGUSR1)
            eq(a.wait(), 0, f"workload exit ({a.stderr()[-300:]!r})")
            eq(g.wait(timeout=20), 0, f"{what}: gpuprobe exit")
            out.seek(0)
            t = truth(a.stderr())
            p = proc(final(out.read()), pid)
            eq(p["allocs_total"], t["allocs"], f"{what}: allocations seen")
            eq(p["outstanding_allocs"], t["leaks"], f"{what}: outstanding")
        finally:
            os.close(fd)
            a.kill()


# --- names on the terminal (docs/security.md, "Names on the terminal") -------------------
# A process names itself and its kernels with terminal escapes: no report may carry them.
BIDI = {0x200E, 0x200F} | set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))


def shown(raw):
    """An independent account of the rule: each character that is not valid UTF-8 (each
    byte), a control character (C0, DEL, C1) or a bidi formatting character reads '?'."""
    out = []
    for ch in raw.decode("utf-8", errors="replace"):
        c = ord(ch)
        out.append("?" if c < 0x20 or 0x7F <= c <= 0x9F or c in BIDI or c == 0xFFFD else ch)
    return "".join(out)


def unsafe_bytes(data, what):
    """Fails on any byte of data a terminal would act on: C0 controls but '\n' and '\t', DEL,
    C1 controls (as UTF-8 or raw), bytes that are not UTF-8, bidi formatting characters."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise gp.Failure(f"{what}: not UTF-8 at byte {e.start}: {data[max(0, e.start - 40):e.start + 40]!r}")
    for i, ch in enumerate(text):
        c = ord(ch)
        if (c < 0x20 and ch not in "\n\t") or 0x7F <= c <= 0x9F or c in BIDI:
            raise gp.Failure(f"{what}: control character U+{c:04X} at {i}: {text[max(0, i - 40):i + 40]!r}")
    return text


def hostile_run(args, n=7, nbytes=3 << 20):
    """gpuprobe ARGS -- hostile_name_app; its stdout, stderr (bytes) and the app's truth."""
    argv = [GPUPROBE] + args + ["--", app("hostile_name_app"), "--n", str(n), "--bytes", str(nbytes)]
    r = subprocess.run(argv, capture_output=True, timeout=90,
                       env=dict(os.environ, **gp._with_state(None)))
    gp._skip_if_refused(argv, r.returncode, r.stderr.decode("utf-8", errors="replace"))
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]!r})")
    t = truth(r.stderr.decode("utf-8", errors="replace"))
    return r, t


def json_strings(o, into=None):
    """Every key and string value in a parsed JSON document."""
    into = set() if into is None else into
    if isinstance(o, dict):
        for k, v in o.items():
            into.add(k)
            json_strings(v, into)
    elif isinstance(o, list):
        for v in o:
            json_strings(v, into)
    elif isinstance(o, str):
        into.add(o)
    return into


def names_of(t):
    comm, kern = bytes.fromhex(t["comm_hex"]), bytes.fromhex(t["kernel_hex"])
    check(b"\x1b" in comm and b"\r" in comm and b"\x07" in comm and b"\x1b" in kern, f"the names: {t}")
    # the comm read from /proc (gp_proc_comm) shows each non-ASCII byte as '?', as top does
    ascii_comm = "".join(chr(b) if 0x20 <= b < 0x7F else "?" for b in comm)
    return (shown(comm), ascii_comm), shown(kern)


def test_hostile_names_text_reports():
    """--memleak, --cudatrace, --bandwidth-util text reports and --trace's summary, on
    stdout (-o -) and on stderr (the default with a command): the names appear, sanitized,
    and the figures are the program's own."""
    for streams in ("-o -", "stderr"):
        extra = ["-o", "-"] if streams == "-o -" else []
        with tempfile.TemporaryDirectory() as d:
            r, t = hostile_run(extra + ["--memleak", "--cudatrace", "--bandwidth-util",
                                        "--trace", os.path.join(d, "t.jsonl")])
        out = unsafe_bytes(r.stdout, f"{streams}: stdout")
        err = unsafe_bytes(r.stderr, f"{streams}: stderr")
        rep = out if streams == "-o -" else err
        comms, kern = names_of(t)
        pid = t["pid"]
        lines = [l for l in rep.splitlines() if l.startswith(f"PID {pid} (")]
        check(lines, f"{streams}: no PID {pid} line in {rep[-2000:]!r}")
        # a line may name the process as it was at its exec, before its prctl
        named = [l for l in lines if any(l.startswith(f"PID {pid} ({c})") for c in comms)]
        check(named, f"{streams}: comm not shown as {comms}: {lines}")
        for l in lines:
            check(l in named or l.startswith(f"PID {pid} (hostile_name_ap)"), f"{streams}: {l!r}")
        kl = [l for l in rep.splitlines() if l.strip().startswith(kern)]
        check(kl, f"{streams}: kernel {kern!r} not in {rep[-2000:]!r}")
        check(f" {t['launches']} " in kl[0], f"{streams}: {t['launches']} launches: {kl[0]!r}")
        check(f"({t['leaked_bytes']:,} B)" in rep, f"{streams}: leaked bytes {t['leaked_bytes']}")


def test_hostile_names_files():
    """--json reports, --trace (JSON Lines and Chrome), --folded and --csv: valid UTF-8
    without control bytes, the JSON parses, and the names are in it."""
    with tempfile.TemporaryDirectory() as d:
        files = {k: os.path.join(d, k) for k in ("t.jsonl", "t.json", "f.folded", "c.csv")}
        r, t = hostile_run(["-o", "-", "--json", "--memleak", "--folded", files["f.folded"], "--cudatrace",
                            "--bandwidth-util", "--csv", files["c.csv"], "--trace", files["t.jsonl"]])
        r2, t2 = hostile_run(["--cudatrace", "--trace", files["t.json"], "--trace-format", "chrome"])
        data = {k: open(v, "rb").read() for k, v in files.items()}
    comm, kern = bytes.fromhex(t["comm_hex"]), bytes.fromhex(t["kernel_hex"])
    out = unsafe_bytes(r.stdout, "--json stdout")
    unsafe_bytes(r.stderr, "--json stderr")
    unsafe_bytes(r2.stderr, "chrome run's stderr")
    recs = gp.json_lines(out)
    check(recs, "no JSON report")
    # JSON keeps the name as it was (json-c escapes C0: "\u001b"), less what is not UTF-8
    # or is a C1 control: '?' each
    want_comm = "".join(ch if not (0x80 <= ord(ch) <= 0x9F or ord(ch) == 0xFFFD) else "?"
                        for ch in comm.decode("utf-8", errors="replace"))
    strings = json_strings(recs)
    check(any(want_comm in x for x in strings), f"--json: comm {want_comm!r} not in the reports")
    check(any("evil\x1b]0;pwn" in x and x.endswith("kern") for x in strings), "--json: the kernel's name")
    text = unsafe_bytes(data["t.jsonl"], "--trace jsonl")
    jl = [json.loads(l) for l in text.splitlines() if l.strip()]
    launches = [o for o in jl if o.get("fn", "").startswith("cuLaunchKernel")]
    eq(len(launches), t["launches"], "--trace: launch records")
    procs = [o for o in jl if o.get("type") == "process" and o.get("pid") == t["pid"]]
    check(procs, f"--trace: no process record of PID {t['pid']}")
    check(any("evil\x1b]0;pwn" in x and x.endswith("kern") for x in json_strings(jl)), "--trace: the kernel's name")
    doc = json.loads(unsafe_bytes(data["t.json"], "--trace chrome"))
    check(doc, "--trace chrome: empty")
    # gpuprobe convert: any JSON Lines file, a process named with C1 CSI escaped in it (json-c
    # reads "\u009b" as U+009B and would write it raw)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as tf:
        for o in jl:
            if o.get("type") == "process":
                o = dict(o, comm="x\u009b[2Jy\u202e")
            tf.write(json.dumps(o) + "\n")
        tf.flush()
        rc = subprocess.run([GPUPROBE, "convert", "--chrome", tf.name], capture_output=True, timeout=60)
    eq(rc.returncode, 0, f"convert exit ({rc.stderr[-500:]!r})")
    conv = json.loads(unsafe_bytes(rc.stdout, "convert's output"))
    check(any("x?[2Jy?" in x for x in json_strings(conv)), "convert: the process's name")
    fold = unsafe_bytes(data["f.folded"], "--folded")
    check(fold.strip(), "--folded: empty")
    csv = unsafe_bytes(data["c.csv"], "--csv")
    check(csv.startswith("timestamp,gpu,"), f"--csv: {csv[:200]!r}")
    total = sum(int(l.split(",")[2]) for l in csv.splitlines()[1:] if l)
    eq(total, t["h2d_bytes"], "--csv: host-to-device bytes")


def test_hostile_names_log_lines():
    """gpuprobe's own lines on stderr (gp_log, the "tracing ... probes on" line) name the
    library paths a process maps: a libcuda in a folder whose name holds ESC, CR and BEL
    (found through LD_LIBRARY_PATH) is shown sanitized."""
    with tempfile.TemporaryDirectory() as d:
        lib_dir = os.path.join(d.encode(), b"lib\x1b[31m\r\x07\xc2\x9b")
        os.mkdir(lib_dir)
        shutil.copy(FAKECUDA, os.path.join(lib_dir, b"libcuda.so.1"))
        old = os.environ.get("LD_LIBRARY_PATH")
        os.environb[b"LD_LIBRARY_PATH"] = lib_dir
        try:
            r, t = hostile_run(["-v", "-o", "-", "--memleak", "--cudatrace"])
        finally:
            if old is None:
                del os.environ["LD_LIBRARY_PATH"]
            else:
                os.environ["LD_LIBRARY_PATH"] = old
        err = unsafe_bytes(r.stderr, "-v stderr")
        unsafe_bytes(r.stdout, "-v stdout")
        want = os.path.join(d, "lib?[31m???", "libcuda.so.1")
        check(want in err, f"the library path {want!r} not in {err[-1500:]!r}")


if __name__ == "__main__":
    # the runs without CAP_SYS_ADMIN cannot mount tracefs themselves: on a fresh machine
    # this file may be the first to need it
    if not os.path.ismount("/sys/kernel/tracing"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=False)
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
