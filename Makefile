# SPDX-License-Identifier: BSD-3-Clause
# gpuprobe: BPF objects (clang, CO-RE) -> skeletons (bpftool) -> the loader (gcc).
# `make V=1` shows the commands; `make STATIC=1` links a static binary for other hosts.
#
# Organised by artifact, as bcc's libbpf-tools Makefile: the tools and flags, the libraries
# and the Debian packages (each once), the lists of what is built, then one section per
# artifact (BPF objects and skeletons, the loader, the stand-in drivers, the workloads, the
# unit tests, the stack-unwinding test programs, the GPU programs, the bundle, install and
# the Debian package), then the commands (test, demo, bench, fuzz, sanitize, vmtest, gate,
# docs...). A new artifact goes in its section; a new library or package in its list.

# ==== tools and flags ====
OUTPUT := .output
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
ARCH := x86
# binutils of the target: a cross compiler's prefix (aarch64-linux-gnu-gcc: aarch64-linux-gnu-)
CROSS_COMPILE ?= $(patsubst %gcc,%,$(filter %-gcc,$(notdir $(CC))))
OBJCOPY ?= $(CROSS_COMPILE)objcopy
NVCC ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc) nvcc)

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS ?= -g -O2
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -fno-omit-frame-pointer -MMD -MP
SRC_DIRS := src/lib src/core src/out src/cli src/modes $(patsubst %/,%,$(wildcard src/modes/*/))
INCLUDES := -I$(OUTPUT) -Isrc -Ibpf
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf -Wall -Werror -MMD -MP

# ==== libraries, once, in link order (a static link resolves left to right) ====
# libbpf, libelf, zlib: BPF objects and ELF symbols; json-c: JSON; libiberty: demangling;
# libmicrohttpd: gpuprobe daemon (src/cli/daemon.c); libdl: gpuprobe check (src/cli/check.c);
# STATIC=1: zstd (libelf's) and pthread; libm: number formatting (src/out/jsonnum.c);
# libyaml (the YAML), libcrypt (bcrypt), libresolv (b64_pton): src/out/webconfig.c; libdw,
# with libelf after it and its decompressors: .gnu_debugdata (xz), compressed sections
# (zlib, bzip2, zstd): DWARF unwinding (src/lib/unwind.c); ncursesw and tinfo: gpuprobe top.
ifeq ($(STATIC),1)
LDFLAGS += -static
endif
LIBS := -lbpf -lelf -lz -ljson-c -liberty -lpthread -lmicrohttpd -ldl \
	$(if $(filter 1,$(STATIC)),-lzstd -lpthread) -lm -lyaml -lcrypt -lresolv \
	-ldw -lelf -lz -llzma -lbz2 -lzstd -lncursesw -ltinfo

# ==== Debian packages, once ====
# What the build and the tests need; `make deps` installs the missing ones. The build's;
# gpuprobe daemon (libmicrohttpd) and its tests (promtool, a server, systemd-analyze);
# chromium renders SVG pictures (tests/tools/svg2png.sh) and runs the flame graph's script
# in test_flame, DejaVu Sans is the font its labels are sized for; the web configuration
# (libyaml, libcrypt) and its tests: openssl (certificates), whois (mkpasswd) and
# apache2-utils (htpasswd) for bcrypt hashes, curl, python3-yaml (manifests), dpkg-dev and
# lintian (the package); the stack unwinding (libdw, libunwind, their decompressors,
# binutils) and python3.11 (Debian's, the CPython the Python-frame tests run); gpuprobe top
# (ncurses) and its tests in tmux (send-keys, capture-pane).
DEB_PKGS := clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev libjson-c-dev \
	libiberty-dev gcc make util-linux procps \
	libmicrohttpd-dev prometheus systemd \
	chromium fonts-dejavu-core \
	libyaml-dev libcrypt-dev openssl whois apache2-utils curl python3-yaml dpkg-dev lintian \
	init-system-helpers \
	libdw-dev libunwind-dev liblzma-dev libbz2-dev binutils python3.11 \
	libncurses-dev tmux
# `make test` runs the BPF load gate: QEMU and what tests/vm/vmtest.sh builds an initramfs
# with, installed when missing (no recommends: no GUI, no firmware)
GATE_DEB_PKGS := qemu-system-x86 busybox-static cpio kmod xz-utils zstd binutils
# `make vmtest` (both architectures)
VM_DEB_PKGS := qemu-system-x86 qemu-system-arm busybox-static cpio kmod xz-utils zstd binutils
# `make vmtest ARCH=arm64`: the cross build's -dev packages come from tests/vm/libs.list,
# which tests/vm/rootfs.sh reads for the VM's runtime packages: one list for both
VM_ARM64_DEB_PKGS := mmdebstrap gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu \
	$(shell sed 's/\#.*//' tests/vm/libs.list | awk 'NF { print $$1 ":arm64" }')

# ==== what is built ====
# the BPF objects and their skeletons; the loader's objects (LOADER_OBJS: all but main, which
# the unit tests and tests/stacks/stackprobe link); the lib objects (src/lib: no libbpf, no
# run; what the fuzzers build, with their libraries LIB_LIBS)
BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
SRCS := $(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.c))
OBJS := $(patsubst src/%.c,$(OUTPUT)/obj/%.o,$(SRCS))
LOADER_OBJS := $(filter-out $(OUTPUT)/obj/cli/main.o,$(OBJS))
# a static gpuprobe's learning program (src/static/selflearn_helper.c) and its image
SL_HELPER_OBJS := $(addprefix $(OUTPUT)/obj/,modes/cudatrace/selflearn.o modes/cudatrace/midname.o lib/u64map.o lib/util.o)
SL_BLOB := $(OUTPUT)/obj/static/selflearn_blob.o
LIB_SRCS := $(wildcard src/lib/*.c)
LIB_LIBS := -ldw -lelf -lz -liberty -lm
BPF_NAMES := $(patsubst bpf/%.bpf.c,%,$(BPF_SRCS))
# the stand-in driver and NCCL (partial/ lacks some exports: a libnccl with missing
# symbols), the workloads (those that call NCCL link it), their launcher scripts, the unit
# tests
FAKECUDA := $(OUTPUT)/fakecuda/libcuda.so.1
# --gpu-time's libraries for the traced processes (src/inject/), beside the binary, and the
# stand-in CUPTI (tests/fakecupti/)
INJECT_LIBS := $(OUTPUT)/libgpuprobe_cupti.so $(OUTPUT)/libgpuprobe_ncclprof.so
FAKECUPTI := $(OUTPUT)/fakecupti/libcupti.so
FAKENCCL := $(OUTPUT)/fakenccl/libnccl.so.2
FAKENCCL_PARTIAL := $(OUTPUT)/fakenccl/partial/libnccl.so.2
# the stand-in NVML, full and an old driver's (old/ lacks process utilization, energy, events)
FAKENVML := $(OUTPUT)/fakenvml/libnvidia-ml.so.1 $(OUTPUT)/fakenvml/old/libnvidia-ml.so.1
NCCL_APPS := $(OUTPUT)/apps/nccl_app $(OUTPUT)/apps/fakenccl_smoke $(OUTPUT)/apps/hang_app
APP_SRCS := $(filter-out tests/apps/common.c,$(wildcard tests/apps/*.c))
APPS := $(patsubst tests/apps/%.c,$(OUTPUT)/apps/%,$(APP_SRCS))
APP_SCRIPTS := $(patsubst tests/apps/%.sh,$(OUTPUT)/apps/%.sh,$(wildcard tests/apps/*.sh))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNITS := $(patsubst tests/unit/%.c,$(OUTPUT)/unit/%,$(UNIT_SRCS))
# stack-unwinding test programs (tests/stacks/) and the DT_RUNPATH chain (tests/apps/chain/)
STK := $(OUTPUT)/stacks
STK_BINS := $(STK)/stackprobe $(STK)/stackapp $(STK)/stackapp-nocfi $(STK)/bad/stackapp-nocfi \
	$(STK)/stackapp-corrupt $(STK)/stackapp-fp $(OUTPUT)/unit/test_stacks_bpf $(STK)/leakexit \
	$(STK)/libone.so
CHAIN := $(OUTPUT)/chain
# GPU programs, built here with the CUDA toolkit for the GPU machine
GPU_OUT := $(OUTPUT)/gpu
# folders of their own: the Debian package's, the sanitizer build's
DEB_DIR := $(OUTPUT)/deb
DEB_BUILD := $(DEB_DIR)/build
DEB_ROOT := $(DEB_DIR)/root
SAN_OUTPUT := .output-san

.PHONY: all gpuprobe testbins test demo deps clean fuzz bundle docs check-layers bench metrics-doc \
	install uninstall deb test-pystack-all bench-stacks gpu-stacks fuzz-stacks sanitize gpu-nccl gpu-hang \
	gpu-node vmtest vmtest-deps support-matrix support-matrix-native gate gate-deps
.SECONDARY:
.DEFAULT_GOAL := all

all: gpuprobe testbins

gpuprobe: $(OUTPUT)/gpuprobe $(INJECT_LIBS)

testbins: $(FAKECUDA) $(FAKECUPTI) $(APPS) $(UNITS) $(FAKENCCL) $(FAKENCCL_PARTIAL) $(FAKENVML) $(APP_SCRIPTS) $(STK_BINS) \
	$(CHAIN)/bin/chain_app

$(OUTPUT) $(OUTPUT)/obj $(OUTPUT)/fakecuda $(OUTPUT)/apps $(OUTPUT)/unit:
	$(Q)mkdir -p $@
$(OUTPUT)/fakenccl $(OUTPUT)/fakenccl/partial:
	$(Q)mkdir -p $@
$(STK) $(STK)/bad:
	$(Q)mkdir -p $@

# ==== BPF objects and skeletons ====
# BPF objects depend on the headers they include (clang -MMD), skeletons on their object.
$(OUTPUT)/%.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MF $(OUTPUT)/$*.bpf.d -MT $@ -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@
# $(OUTPUT)/bpf_objects.h: every skeleton, from bpf/*.bpf.c, for src/cli/bpfcheck.c (a new
# object is checked without being named anywhere).
BPF_NAMES := $(patsubst bpf/%.bpf.c,%,$(BPF_SRCS))
$(OUTPUT)/bpf_objects.h: $(SKELS) | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q){ echo '/* generated by the Makefile from the objects of bpf/: every skeleton */'; \
	  for n in $(BPF_NAMES); do echo "#include \"$$n.skel.h\""; done; \
	  printf '#define GP_BPF_OBJECTS(X)'; for n in $(BPF_NAMES); do printf ' X(%s)' $$n; done; echo; } > $@.tmp
	$(Q)mv $@.tmp $@

# ==== the loader ====
# The skeletons are generated first (order-only); an object is rebuilt when a header it
# really includes changes, its own skeleton among them (-MMD).
$(OUTPUT)/obj/%.o: src/%.c | $(SKELS) $(OUTPUT)/obj
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -c $< -o $@
$(OUTPUT)/obj/cli/bpfcheck.o: $(OUTPUT)/bpf_objects.h

$(OUTPUT)/gpuprobe: $(OBJS) $(if $(filter 1,$(STATIC)),$(SL_BLOB))
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@

# ==== --gpu-time's libraries (src/inject/): loaded by CUDA and NCCL inside traced processes ====
# No CUPTI or NCCL at build time (their few declarations are in src/inject/); C only, no
# libbpf: what a traced process loads stays small.
# INJECT_EXTRA: flags added by `make deb` (dpkg-buildflags' hardening, as the binary's)
INJECT_CFLAGS = -shared -fPIC -O2 -g -std=gnu11 -fvisibility=hidden -Wall -Wextra -Werror -Isrc/inject $(INJECT_EXTRA)
$(OUTPUT)/libgpuprobe_cupti.so: src/inject/cupti_inject.c src/inject/sender.c src/inject/sender.h \
		src/inject/gputime_wire.h src/inject/cupti_decl.h | $(OUTPUT)
	$(call msg,INJECT,$@)
	$(Q)$(CC) $(INJECT_CFLAGS) -o $@ src/inject/cupti_inject.c src/inject/sender.c -ldl -lpthread
$(OUTPUT)/libgpuprobe_ncclprof.so: src/inject/ncclprof.c src/inject/sender.c src/inject/sender.h \
		src/inject/gputime_wire.h src/inject/ncclprof_decl.h | $(OUTPUT)
	$(call msg,INJECT,$@)
	$(Q)$(CC) $(INJECT_CFLAGS) -o $@ src/inject/ncclprof.c src/inject/sender.c -lpthread
# The stand-in CUPTI: scripted activity records through the buffer callbacks.
$(FAKECUPTI): tests/fakecupti/fakecupti.c src/inject/cupti_decl.h
	$(call msg,FAKECUPTI,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -fPIC -O1 -g -std=gnu11 -Wall -Wextra -Werror -Isrc/inject -o $@ $< -lpthread

# ==== the stand-in driver and NCCL (tests/fakecuda, tests/fakenccl) ====
# The stand-in driver: SONAME libcuda.so.1, cuda.h's signatures (tests/fakecuda/).
$(FAKECUDA): tests/fakecuda/fakecuda.c tests/fakecuda/fakecuda.h | $(OUTPUT)/fakecuda
	$(call msg,FAKECUDA,$@)
	$(Q)$(CC) -shared -fPIC -O1 -g -fno-omit-frame-pointer -fno-inline -Wall -Wextra -Werror \
		-Wl,-soname,libcuda.so.1 -o $@ $< -lpthread
	$(Q)ln -sf libcuda.so.1 $(OUTPUT)/fakecuda/libcuda.so
# The stand-in's extensions header (its own counters), used by the driver and the workloads.
$(FAKECUDA) $(APPS): tests/fakecuda/fakecuda_ext.h

FAKENCCL_CFLAGS := -shared -fPIC -O1 -g -std=gnu11 -fno-omit-frame-pointer -fno-inline \
	-fvisibility=hidden -Wall -Wextra -Werror -Itests/fakecuda -Itests/fakenccl -Isrc/inject

$(FAKENCCL): tests/fakenccl/fakenccl.c tests/fakenccl/fakenccl.h tests/fakecuda/fakecuda.h \
		tests/fakenccl/profhook.c tests/fakenccl/profhook.h src/inject/ncclprof_decl.h \
		$(FAKECUDA) | $(OUTPUT)/fakenccl
	$(call msg,FAKENCCL,$@)
	$(Q)$(CC) $(FAKENCCL_CFLAGS) -Wl,-soname,libnccl.so.2 -o $@ $< tests/fakenccl/profhook.c \
		-L$(OUTPUT)/fakecuda -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN/../fakecuda' -lpthread
	$(Q)ln -sf libnccl.so.2 $(OUTPUT)/fakenccl/libnccl.so

$(FAKENCCL_PARTIAL): tests/fakenccl/fakenccl.c tests/fakenccl/fakenccl.h tests/fakecuda/fakecuda.h \
		tests/fakenccl/profhook.c tests/fakenccl/profhook.h src/inject/ncclprof_decl.h \
		$(FAKECUDA) | $(OUTPUT)/fakenccl/partial
	$(call msg,FAKENCCL,$@)
	$(Q)$(CC) $(FAKENCCL_CFLAGS) -DFAKENCCL_PARTIAL -Wl,-soname,libnccl.so.2 -o $@ $< tests/fakenccl/profhook.c \
		-L$(OUTPUT)/fakecuda -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN/../../fakecuda' -lpthread

# The stand-in NVML (tests/fakenvml/): SONAME libnvidia-ml.so.1, scripted by FAKENVML_SCRIPT.
$(FAKENVML): tests/fakenvml/fakenvml.c
	$(call msg,FAKENVML,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -fPIC -O1 -g -Wall -Wextra -Werror $(if $(findstring /old/,$@),-DFAKENVML_OLD) \
		-Wl,-soname,libnvidia-ml.so.1 -o $@ $< -lpthread

# ==== workloads (tests/apps) ====
# Workloads: frame pointers and no inlining, so stacks name their functions.
$(OUTPUT)/apps/%: tests/apps/%.c tests/apps/common.c tests/apps/common.h $(FAKECUDA) | $(OUTPUT)/apps
	$(call msg,APP,$@)
	$(Q)$(CC) -O0 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -Itests/fakecuda -Itests/apps \
		-o $@ $< tests/apps/common.c -L$(OUTPUT)/fakecuda -l:libcuda.so.1 -lpthread \
		-Wl,-rpath,'$$ORIGIN/../fakecuda'

# An explicit rule: overrides the generic app rule for these.
$(NCCL_APPS): $(OUTPUT)/apps/%: tests/apps/%.c tests/apps/common.c tests/apps/common.h \
		tests/fakenccl/fakenccl.h $(FAKENCCL) | $(OUTPUT)/apps
	$(call msg,APP,$@)
	$(Q)$(CC) -O0 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -Itests/fakecuda -Itests/fakenccl \
		-Itests/apps -o $@ $< tests/apps/common.c -L$(OUTPUT)/fakenccl -l:libnccl.so.2 \
		-L$(OUTPUT)/fakecuda -l:libcuda.so.1 -lpthread \
		-Wl,-rpath,'$$ORIGIN/../fakenccl:$$ORIGIN/../fakecuda'

# nccl_dlopen_app loads libnccl with dlopen (the stand-in's header only, no link to it).
$(OUTPUT)/apps/nccl_dlopen_app: tests/apps/nccl_dlopen_app.c tests/apps/common.c tests/apps/common.h \
		tests/fakenccl/fakenccl.h $(FAKECUDA) | $(OUTPUT)/apps
	$(call msg,APP,$@)
	$(Q)$(CC) -O0 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -Itests/fakecuda -Itests/fakenccl \
		-Itests/apps -o $@ $< tests/apps/common.c -L$(OUTPUT)/fakecuda -l:libcuda.so.1 -lpthread -ldl \
		-Wl,-rpath,'$$ORIGIN/../fakecuda'

# Launcher scripts (an NCCL job, a process tree) run the workloads beside them.
$(OUTPUT)/apps/%.sh: tests/apps/%.sh | $(OUTPUT)/apps
	$(call msg,COPY,$@)
	$(Q)install -m 0755 $< $@

# A program whose libcuda is found only through the DT_RUNPATH of a library it needs
# (bin/chain_app -> lib/libchain.so -> ../drv/libcuda.so.1): src/lib/ldpath.c's chain.
$(CHAIN)/lib/libchain.so: tests/apps/chain/chainlib.c tests/fakecuda/fakecuda.h $(FAKECUDA)
	$(call msg,LIB,$@)
	$(Q)mkdir -p $(CHAIN)/lib
	$(Q)$(CC) -shared -fPIC -O0 -g -Wall -Wextra -Werror -Itests/fakecuda -o $@ $< \
		-L$(OUTPUT)/fakecuda -l:libcuda.so.1 -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/../drv'
$(CHAIN)/bin/chain_app: tests/apps/chain/chain_app.c $(CHAIN)/lib/libchain.so
	$(call msg,APP,$@)
	$(Q)mkdir -p $(CHAIN)/bin
	$(Q)$(CC) -O0 -g -Wall -Wextra -Werror -o $@ $< -L$(CHAIN)/lib -lchain \
		-Wl,--enable-new-dtags,-rpath,'$$ORIGIN/../lib' -Wl,-rpath-link,$(OUTPUT)/fakecuda

# ==== unit tests ====
$(OUTPUT)/unit/%: tests/unit/%.c tests/unit/unit.h $(LOADER_OBJS) | $(OUTPUT)/unit
	$(call msg,UNIT,$@)
	$(Q)$(CC) -O0 -g -fno-omit-frame-pointer -std=gnu11 -Wall -Wextra -Werror $(INCLUDES) \
		-Itests/unit -o $@ $< $(LOADER_OBJS) $(LIBS)

# ==== stack unwinding: DWARF from a stack copy, Python frames (tests/stacks/) ====
UNWIND_ARCH := $(if $(filter arm64,$(ARCH)),aarch64,x86_64) # libunwind's name of the target
STK_APP_FLAGS := -O2 -g -fomit-frame-pointer -Wall -Wextra -Werror -Itests/fakecuda -Itests/apps
# The stand-in through $ORIGIN, as the other workloads find it: the arm64 build
# (.output/arm64) is .output inside the test VM, where an absolute path of the build
# machine names nothing (exit 127). Two levels: bad/stackapp-nocfi is stackapp-nocfi's copy.
STK_APP_LINK := tests/apps/common.c -L$(OUTPUT)/fakecuda -l:libcuda.so.1 -lpthread \
	-Wl,-rpath,'$$ORIGIN/../fakecuda:$$ORIGIN/../../fakecuda'

$(STK)/stackprobe.bpf.o: tests/stacks/stackprobe.bpf.c tests/stacks/stackprobe.h bpf/stackcopy.bpf.h vmlinux/$(ARCH)/vmlinux.h | $(STK)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Itests/stacks -MF $(STK)/stackprobe.bpf.d -MT $@ -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(STK)/stackprobe.skel.h: $(STK)/stackprobe.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(STK)/stackprobe: tests/stacks/stackprobe.c tests/stacks/stackprobe.h tests/stacks/unwind_libunwind.c \
		tests/stacks/unwind_libunwind.h $(STK)/stackprobe.skel.h $(LOADER_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -I$(STK) -Itests/stacks -o $@ $< tests/stacks/unwind_libunwind.c \
		$(LOADER_OBJS) $(LIBS) -lunwind-$(UNWIND_ARCH) -lunwind

# -O2 without frame pointers, with .eh_frame: what `gcc -O2` gives users.
$(STK)/stackapp: tests/stacks/stackapp.c tests/apps/common.c $(FAKECUDA) | $(STK)
	$(call msg,APP,$@)
	$(Q)$(CC) $(STK_APP_FLAGS) -o $@ $< $(STK_APP_LINK)

# The memleak example of issue 29: exits at once, its allocating helper inlined twice over.
$(STK)/libleakhelp.so: tests/stacks/leakhelp.c tests/apps/common.c $(FAKECUDA) | $(STK)
	$(call msg,LIB,$@)
	$(Q)$(CC) $(STK_APP_FLAGS) -fPIC -shared -o $@ $< $(STK_APP_LINK)
$(STK)/libleaklate.so: tests/stacks/leakhelp.c tests/apps/common.c $(FAKECUDA) | $(STK)
	$(call msg,LIB,$@)
	$(Q)$(CC) $(STK_APP_FLAGS) -DLATE -fPIC -shared -o $@ $< $(STK_APP_LINK)
$(STK)/leakexit: tests/stacks/leakexit.c tests/apps/common.c $(STK)/libleakhelp.so $(STK)/libleaklate.so \
		$(FAKECUDA) | $(STK)
	$(call msg,APP,$@)
	$(Q)$(CC) $(STK_APP_FLAGS) -o $@ $< -L$(STK) -l:libleakhelp.so -Wl,-rpath,'$$ORIGIN' $(STK_APP_LINK) -ldl

# One tiny library that test_kept_files_limit copies 300 times (built here: the arm64
# VM's userland has no compiler).
$(STK)/libone.so: tests/stacks/one.c | $(STK)
	$(call msg,LIB,$@)
	$(Q)$(CC) -O2 -fPIC -shared -o $@ $<

# No .eh_frame for our code: CFI only in .debug_frame, moved to a separate debug
# file found through .gnu_debuglink (and build-id); the binary is stripped.
$(STK)/stackapp-nocfi: tests/stacks/stackapp.c tests/apps/common.c $(FAKECUDA) | $(STK)
	$(call msg,APP,$@)
	$(Q)$(CC) $(STK_APP_FLAGS) -fno-asynchronous-unwind-tables -fno-unwind-tables -o $@.full $< $(STK_APP_LINK)
	$(Q)$(OBJCOPY) --only-keep-debug $@.full $@.debug
	$(Q)$(OBJCOPY) --strip-all --add-gnu-debuglink=$@.debug $@.full $@ && rm -f $@.full

# No call-frame information at all (no .eh_frame, no -g) but frame pointers: the unwinder's
# frame-pointer fallback, frame by frame.
$(STK)/stackapp-fp: tests/stacks/stackapp.c tests/apps/common.c $(FAKECUDA) | $(STK)
	$(call msg,APP,$@)
	$(Q)$(CC) -O2 -fno-omit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables -Wall -Wextra \
		-Werror -Itests/fakecuda -Itests/apps -o $@ $< $(STK_APP_LINK)

# The same stripped binary beside a debug file of ANOTHER build (other build-id).
$(STK)/bad/stackapp-nocfi: $(STK)/stackapp-nocfi tests/stacks/stackapp.c | $(STK)/bad
	$(call msg,APP,$@)
	$(Q)$(CC) $(STK_APP_FLAGS) -DSTACKAPP_VARIANT -fno-asynchronous-unwind-tables -fno-unwind-tables \
		-o $@.other tests/stacks/stackapp.c $(STK_APP_LINK)
	$(Q)$(OBJCOPY) --only-keep-debug $@.other $@.debug && rm -f $@.other
	$(Q)cp $(STK)/stackapp-nocfi $@

# .eh_frame overwritten with seeded random bytes (same size, same place).
$(STK)/stackapp-corrupt: $(STK)/stackapp tests/stacks/corrupt_eh_frame.py
	$(call msg,APP,$@)
	$(Q)python3 tests/stacks/corrupt_eh_frame.py $< $@

# tests/run.sh runs every .output/unit/test_*: this one is the BPF end-to-end suite.
$(OUTPUT)/unit/test_stacks_bpf: tests/stacks/test_stacks.py | $(OUTPUT)/unit
	$(Q)printf '#!/bin/sh\nexec python3 "%s" "$$@"\n' "$(abspath tests/stacks/test_stacks.py)" > $@ && chmod +x $@


# ==== GPU programs (nvcc), for the GPU machine (no package registry there) ====
# tests/gpu/run_gpu_stacks.sh's CUDA C leak workload, built with the CUDA 13 toolkit (-O2, no
# frame pointers; cudart static and shared; sm_90 code and PTX), to carry with `make bundle`.
NVCC_FLAGS := -O2 -g -Xcompiler -fomit-frame-pointer -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
gpu-stacks: $(GPU_OUT)/stacks_leak_static $(GPU_OUT)/stacks_leak_shared $(GPU_OUT)/leak_exit_static \
	$(GPU_OUT)/leak_exit_shared
$(GPU_OUT)/stacks_leak_static: tests/gpu/stacks_leak.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(GPU_OUT) && $(NVCC) $(NVCC_FLAGS) -o $@ $<
$(GPU_OUT)/stacks_leak_shared: tests/gpu/stacks_leak.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(GPU_OUT) && $(NVCC) $(NVCC_FLAGS) -cudart shared -o $@ $<

# tests/gpu/run_leak_exit.sh (issue 29): the memleak example as users build it, -O2 -g.
$(GPU_OUT)/leak_exit_static: tests/gpu/leak_exit.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(GPU_OUT) && $(NVCC) -O2 -g -gencode arch=compute_90,code=sm_90 \
		-gencode arch=compute_90,code=compute_90 -o $@ $<
$(GPU_OUT)/leak_exit_shared: tests/gpu/leak_exit.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(GPU_OUT) && $(NVCC) -O2 -g -gencode arch=compute_90,code=sm_90 \
		-gencode arch=compute_90,code=compute_90 -cudart shared -o $@ $<

# `make gpu-nccl`: what tests/gpu/run_nccl.sh runs on the 2-GPU machine, built here (nothing
# is built there): the static gpuprobe and peer_cuda (nvcc from the CUDA toolkit here).
gpu-nccl: $(OUTPUT)/bundle/gpuprobe $(OUTPUT)/bundle/gpu/peer_cuda

$(OUTPUT)/bundle/gpu/peer_cuda: tests/gpu/peer_cuda.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) -O2 -std=c++17 -o $@ $<

# `make gpu-hang`: what tests/gpu/run_hang.sh runs (issue 34 item 3), built here: the static
# gpuprobe and hang_cuda (a single-rank NCCL communicator held behind a kernel spinning on a
# host-mapped flag; NCCL's header and libnccl.so from the CUDA toolkit here, the GPU
# machine's libnccl.so.2 at run time).
gpu-hang: $(OUTPUT)/bundle/gpuprobe $(OUTPUT)/bundle/gpu/hang_cuda

$(OUTPUT)/bundle/gpu/hang_cuda: tests/gpu/hang_cuda.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
		-o $@ $< -lnccl

# `make gpu-node`: what tests/gpu/run_node.sh runs on a multi-GPU node (issue 20; any GPU
# count), built here: the static gpuprobe and peer_matrix (sm_90 code and PTX).
gpu-node: $(OUTPUT)/bundle/gpuprobe $(OUTPUT)/bundle/gpu/peer_matrix

$(OUTPUT)/bundle/gpu/peer_matrix: tests/gpu/peer_matrix.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -o $@ $<
# ==== the bundle: a folder to carry to another host ====
# A folder to carry to another host (the GPU machine has no package registry): a static
# gpuprobe, with the GPU test scripts beside it.
bundle: $(OUTPUT)/bundle/gpuprobe $(OUTPUT)/bundle/dyn/gpuprobe $(patsubst $(OUTPUT)/%,$(OUTPUT)/bundle/%,$(INJECT_LIBS))

# --gpu-time's libraries beside the bundle's binary (where it looks first)
$(OUTPUT)/bundle/libgpuprobe_%.so: $(OUTPUT)/libgpuprobe_%.so
	$(Q)mkdir -p $(@D)
	$(Q)cp $< $@

# The dynamically linked build with its libraries beside it (glibc excepted: the target's
# is newer): `gpuprobe check` needs it to load a real driver, which static glibc cannot host.
$(OUTPUT)/bundle/dyn/gpuprobe: $(OUTPUT)/gpuprobe
	$(call msg,BUNDLE,$@)
	$(Q)rm -rf $(OUTPUT)/bundle/dyn && mkdir -p $(OUTPUT)/bundle/dyn/lib
	$(Q)cp $< $@
	$(Q)ldd $< | awk '$$3 ~ /^\// {print $$3}' | grep -v -E '/(libc|libm|libpthread|libdl|ld-linux[^/]*)\.so' | \
		xargs -r -I{} cp -L {} $(OUTPUT)/bundle/dyn/lib/
	$(Q)printf '#!/bin/sh\nd=$$(dirname "$$0")\nLD_LIBRARY_PATH="$$d/lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" exec "$$d/gpuprobe" "$$@"\n' > $(OUTPUT)/bundle/dyn/run && chmod +x $(OUTPUT)/bundle/dyn/run

# The static gpuprobe's learning program (src/static/selflearn_helper.c): the self-learning
# child dynamically linked, kept in the static image (selflearn_blob.S), run from memory.
$(OUTPUT)/selflearn-helper: src/static/selflearn_helper.c $(SL_HELPER_OBJS)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) -Isrc $^ -ldl -o $@
$(OUTPUT)/obj/static/selflearn_blob.o: src/static/selflearn_blob.S $(OUTPUT)/selflearn-helper
	$(call msg,AS,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -c -Wa,-I$(OUTPUT) $< -o $@

$(OUTPUT)/bundle/gpuprobe: $(OBJS) $(SL_BLOB) src/static/mhd_notls.c
	$(call msg,STATIC,$@)
	$(Q)mkdir -p $(OUTPUT)/bundle
	$(Q)$(CC) $(CFLAGS) -static $^ $(LIBS) -lzstd -lpthread -o $@ 2>&1 | \
		grep -v "statically linked applications requires at runtime" | grep -v "in function" || true
	$(Q)test -x $@

# ==== install and the Debian package ====
# `make install`: PREFIX (/usr/local) and DESTDIR as usual. The binary goes to bin, as in
# node_exporter's Debian package (/usr/bin/prometheus-node-exporter): gpuprobe is also a
# command users run. The unit goes where systemd looks ($(PREFIX)/lib/systemd/system) with
# ExecStart pointing at the installed binary; /etc/gpuprobe/gpuprobe.conf (the daemon's
# --config) is installed only if absent, so an admin's settings survive a reinstall.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
# --gpu-time's libraries, loaded inside the traced processes: private to gpuprobe, where the
# binary looks for them ($(BINDIR)/../lib/gpuprobe; src/modes/gputime/gputime_mode.c)
GPUPROBE_LIBDIR = $(PREFIX)/lib/gpuprobe

install: $(OUTPUT)/gpuprobe $(INJECT_LIBS)
	$(call msg,INSTALL,$(DESTDIR)$(BINDIR)/gpuprobe)
	$(Q)test "$(abspath $(BINDIR)/../lib/gpuprobe)" = "$(abspath $(GPUPROBE_LIBDIR))" || \
		{ echo "make install: BINDIR must be PREFIX/bin: gpuprobe finds its libraries in BINDIR/../lib/gpuprobe" >&2; exit 1; }
	$(Q)install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSTEMDUNITDIR) \
		$(DESTDIR)$(SYSCONFDIR)/gpuprobe $(DESTDIR)$(GPUPROBE_LIBDIR)
	$(Q)install -m 0755 $(OUTPUT)/gpuprobe $(DESTDIR)$(BINDIR)/gpuprobe
	$(Q)install -m 0644 $(INJECT_LIBS) $(DESTDIR)$(GPUPROBE_LIBDIR)/
	$(Q)install -m 0644 docs/gpuprobe.8 $(DESTDIR)$(MANDIR)/man8/gpuprobe.8
	$(Q)sed -e 's|^ExecStart=/usr/local/bin/gpuprobe |ExecStart=$(BINDIR)/gpuprobe |' \
		-e 's| /etc/gpuprobe/gpuprobe.conf$$| $(SYSCONFDIR)/gpuprobe/gpuprobe.conf|' \
		examples/systemd/gpuprobe.service > $(DESTDIR)$(SYSTEMDUNITDIR)/gpuprobe.service.tmp
	$(Q)grep -q '^ExecStart=$(BINDIR)/gpuprobe ' $(DESTDIR)$(SYSTEMDUNITDIR)/gpuprobe.service.tmp
	$(Q)chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/gpuprobe.service.tmp
	$(Q)mv $(DESTDIR)$(SYSTEMDUNITDIR)/gpuprobe.service.tmp $(DESTDIR)$(SYSTEMDUNITDIR)/gpuprobe.service
	$(Q)test -e $(DESTDIR)$(SYSCONFDIR)/gpuprobe/gpuprobe.conf || \
		install -m 0644 examples/config/gpuprobe.conf $(DESTDIR)$(SYSCONFDIR)/gpuprobe/gpuprobe.conf

uninstall:
	$(Q)rm -f $(DESTDIR)$(BINDIR)/gpuprobe $(DESTDIR)$(MANDIR)/man8/gpuprobe.8 \
		$(DESTDIR)$(SYSTEMDUNITDIR)/gpuprobe.service \
		$(patsubst $(OUTPUT)/%,$(DESTDIR)$(GPUPROBE_LIBDIR)/%,$(INJECT_LIBS))
	$(Q)rmdir $(DESTDIR)$(GPUPROBE_LIBDIR) 2>/dev/null || true
	@echo "  kept     $(DESTDIR)$(SYSCONFDIR)/gpuprobe/gpuprobe.conf (your settings)"

# `make deb`: a Debian package from a staged tree (dpkg-deb), built the Debian way: the
# hardening flags of dpkg-buildflags in a build folder of its own, the binary stripped as
# dh_strip does, Depends from dpkg-shlibdeps, maintainer scripts as dh_installsystemd
# writes them (examples/packaging/debian/). The version is what the binary reports.
DEB_ARCH = $(shell dpkg --print-architecture)
DEB_MAINTAINER ?= gpuprobe maintainers <maintainers@users.noreply.a-seed-14e45ab7.example>
DEB_FLAGS = $(shell DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CFLAGS) \
	$(shell DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CPPFLAGS)
DEB_LDFLAGS = $(shell DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get LDFLAGS)

deb:
	$(call msg,DEB-CC,$(DEB_BUILD)/gpuprobe)
	$(Q)CFLAGS="$(DEB_FLAGS)" LDFLAGS="$(DEB_LDFLAGS)" $(MAKE) --no-print-directory \
		OUTPUT=$(DEB_BUILD) $(DEB_BUILD)/gpuprobe
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(DEB_BUILD) INJECT_EXTRA="$(DEB_FLAGS) $(DEB_LDFLAGS)" \
		$(patsubst $(OUTPUT)/%,$(DEB_BUILD)/%,$(INJECT_LIBS))
	$(Q)rm -rf $(DEB_ROOT) $(DEB_DIR)/shlibs
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(DEB_BUILD) install DESTDIR=$(abspath $(DEB_ROOT)) \
		PREFIX=/usr SYSTEMDUNITDIR=/lib/systemd/system
	$(Q)set -e; r=$(DEB_ROOT); \
	version=$$($$r/usr/bin/gpuprobe --version | sed -n 's/^gpuprobe \([0-9][0-9A-Za-z.+~-]*\)$$/\1/p'); \
	test -n "$$version" || { echo "make deb: no version from gpuprobe --version" >&2; exit 1; }; \
	strip --remove-section=.comment --remove-section=.note --strip-unneeded $$r/usr/bin/gpuprobe \
		$$r/usr/lib/gpuprobe/libgpuprobe_*.so; \
	gzip -9n $$r/usr/share/man/man8/gpuprobe.8; \
	install -d $$r/usr/share/doc/gpuprobe $$r/DEBIAN; \
	install -m 0644 examples/packaging/debian/copyright $$r/usr/share/doc/gpuprobe/copyright; \
	date=$$(date -R -u -d @$$(git log -1 --format=%ct 2>/dev/null || date +%s)); \
	commit=$$(git rev-parse --short HEAD 2>/dev/null || echo unknown); \
	sed -e "s|@VERSION@|$$version|" -e "s|@COMMIT@|$$commit|" -e "s|@MAINTAINER@|$(DEB_MAINTAINER)|" \
		-e "s|@DATE@|$$date|" examples/packaging/debian/changelog.in | gzip -9n > $$r/usr/share/doc/gpuprobe/changelog.gz; \
	chmod 0644 $$r/usr/share/doc/gpuprobe/changelog.gz; \
	mkdir -p $(DEB_DIR)/shlibs/debian; \
	printf 'Source: gpuprobe\n\nPackage: gpuprobe\nArchitecture: any\n' > $(DEB_DIR)/shlibs/debian/control; \
	deps=$$(cd $(DEB_DIR)/shlibs && dpkg-shlibdeps -O -e$(abspath $(DEB_ROOT))/usr/bin/gpuprobe \
		$(foreach l,$(INJECT_LIBS),-e$(abspath $(DEB_ROOT))/usr/lib/gpuprobe/$(notdir $(l))) 2>/dev/null | \
		sed -n 's/^shlibs:Depends=//p'); \
	test -n "$$deps" || { echo "make deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }; \
	install -m 0755 examples/packaging/debian/postinst examples/packaging/debian/prerm \
		examples/packaging/debian/postrm $$r/DEBIAN/; \
	install -m 0644 examples/packaging/debian/conffiles $$r/DEBIAN/conffiles; \
	(cd $$r && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | LC_ALL=C sort -z | \
		xargs -0 md5sum) > $$r/DEBIAN/md5sums; \
	chmod 0644 $$r/DEBIAN/md5sums; \
	size=$$(du -k -s --exclude=DEBIAN $$r | cut -f1); \
	sed -e "s|@VERSION@|$$version|" -e "s|@ARCH@|$(DEB_ARCH)|" -e "s|@MAINTAINER@|$(DEB_MAINTAINER)|" \
		-e "s|@SIZE@|$$size|" -e "s|@DEPENDS@|$$deps, init-system-helpers (>= 1.54~)|" \
		examples/packaging/debian/control.in > $$r/DEBIAN/control; \
	out=$(DEB_DIR)/gpuprobe_$${version}_$(DEB_ARCH).deb; \
	dpkg-deb --root-owner-group -Zxz --build $$r $$out >/dev/null; \
	ln -sf $$(basename $$out) $(DEB_DIR)/gpuprobe.deb; \
	echo "  DEB      $$out"

# ==== commands ====
# The Debian packages of the lists above that are missing, installed (deps: the build's and
# the tests'; gate-deps: the BPF load gate's; vmtest-deps: vmtest's, for ARCH).
deps:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

gate-deps:
	@missing=""; for p in $(GATE_DEB_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

vmtest-deps: deps
	@pkgs="$(VM_DEB_PKGS)"; \
	if [ "$(ARCH)" = arm64 ]; then \
		dpkg --print-foreign-architectures | grep -qx arm64 || \
			{ dpkg --add-architecture arm64 && apt-get update -qq; }; \
		pkgs="$$pkgs $(VM_ARM64_DEB_PKGS)"; \
	fi; \
	missing=""; for p in $$pkgs; do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The layering of src/ (docs/design.md, "Layout"): no include cycle, no mode including
# another, no two folders including from each other. tests/run.sh runs it as a suite.
check-layers:
	$(Q)tests/tools/check_layers.py

# The README's test command: installs what is missing, builds, runs every suite (the BPF
# load gate among them: tests/run.sh's suite bpf-gate).
test: deps gate-deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/run.sh

# The gate alone (a few minutes): make gate [VM_KERNEL=...] [VM_RECORD=1: saved in docs/vmruns/]
gate: deps gate-deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/vm/gate.sh x86

# Runs gpuprobe on a bundled workload: real CUDA where a GPU and nvcc exist, else the
# stand-in driver.
demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)examples/demo.sh

# Benchmarks on the stand-in driver with real BPF (bench/run.py, root): per-call cost against
# an empty uprobe, bpftrace and LD_PRELOAD, attach time, RSS over BENCH_SOAK_SECONDS (60),
# ring-buffer rate. Writes docs/benchmarks.md; installs bpftrace with apt if it is missing.
bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)python3 bench/run.py

# What one stack costs per allocation event (fp, copy + DWARF, + Python; libdwfl vs libunwind).
bench-stacks: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)python3 tests/stacks/bench_stacks.py | tee $(OUTPUT)/stacks/bench.md

# libFuzzer targets for what a traced process controls (ELF files, sparse ones included,
# through the fd-taking parser; /proc/PID/maps lines and the library entries derived from
# them; a process's root as a fuzzed tree of links, FIFOs and hard links for safeopen),
# seeded with a hand-made ELF, system libraries and real maps. FUZZ_SECONDS per target; an
# input that runs past 5 s is a hang and fails the target.
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_LIB := $(LIB_SRCS) src/modes/cudatrace/layouts.c src/modes/gputime/gputime.c
fuzz: deps
	$(Q)$(MAKE) --no-print-directory $(OUTPUT)/unit/test_elfsym
	$(Q)mkdir -p $(OUTPUT)/fuzz/seed-elfsym $(OUTPUT)/fuzz/seed-procmaps $(OUTPUT)/fuzz/seed-safeopen $(OUTPUT)/fuzz/seed-layouts \
		$(OUTPUT)/fuzz/seed-gputime
	$(Q)printf '\002\003\000\100\000\000\000\000\000\001\000\000\000\000\000\000\000\002\000\000\000\000\000\000\000' > $(OUTPUT)/fuzz/seed-gputime/kernel
	$(Q)printf '# c\ngpuprobe-layouts 1\ngnu-0a1b 0000000100000001 1 0\nfnv-9-ff 2 3 1000\n' > $(OUTPUT)/fuzz/seed-layouts/file
	$(Q)$(OUTPUT)/unit/test_elfsym --write-mini-elf $(OUTPUT)/fuzz/seed-elfsym/mini.elf
	$(Q)cp /lib/x86_64-linux-gnu/libdl.so.2 $(OUTPUT)/fuzz/seed-elfsym/ 2>/dev/null || true
	$(Q)cp /proc/self/maps $(OUTPUT)/fuzz/seed-procmaps/self.maps
	$(Q)printf '\006\001\002\002\002\003\003\001\002\002\002\001\002\000\002\003\002\002\003\000' > $(OUTPUT)/fuzz/seed-safeopen/tree
	$(Q)for f in $(FUZZ_SRCS); do n=$$(basename $$f .c); s=$${n#fuzz_}; \
		clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -Ibpf -o $(OUTPUT)/fuzz/$$n $$f $(FUZZ_LIB) $(LIB_LIBS) || exit 1; \
		echo "  FUZZ     $$n ($${FUZZ_SECONDS:-30}s)"; \
		rm -rf $(OUTPUT)/fuzz/tmp && mkdir -p $(OUTPUT)/fuzz/tmp; \
		FUZZ_TMPDIR=$(abspath $(OUTPUT))/fuzz/tmp $(OUTPUT)/fuzz/$$n -max_total_time=$${FUZZ_SECONDS:-30} \
			-timeout=5 -print_final_stats=1 -artifact_prefix=$(OUTPUT)/fuzz/$$n- \
			$(OUTPUT)/fuzz/seed-$$s > $(OUTPUT)/fuzz/$$n.log 2>&1 || { tail -30 $(OUTPUT)/fuzz/$$n.log; exit 1; }; \
		grep -E "stat::number_of_executed_units" $(OUTPUT)/fuzz/$$n.log; \
	done; rm -rf $(OUTPUT)/fuzz/tmp

# libFuzzer on the CPython line-table decoders (tables come out of traced processes).
fuzz-stacks: deps
	$(Q)mkdir -p $(STK)/fuzz/seed
	$(Q)printf '\002\000\000\000\351\002\322\005\011\370\360\007\000\001\001' > $(STK)/fuzz/seed/t311
	$(Q)printf '\004\000\000\000\004\001\006\000\002\200' > $(STK)/fuzz/seed/t310
	$(Q)clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -Ibpf -o $(STK)/fuzz/fuzz_pylines \
		tests/stacks/fuzz_pylines.c $(LIB_SRCS) $(LIB_LIBS)
	$(Q)$(STK)/fuzz/fuzz_pylines -max_total_time=$${FUZZ_SECONDS:-30} -print_final_stats=1 $(STK)/fuzz/seed \
		> $(STK)/fuzz/fuzz_pylines.log 2>&1 || { tail -30 $(STK)/fuzz/fuzz_pylines.log; exit 1; }
	$(Q)grep -E "stat::number_of_executed_units" $(STK)/fuzz/fuzz_pylines.log

# make sanitize: gpuprobe and its unit tests built with ASan + UBSan (every report fatal,
# leaks included) in a folder of their own, the stand-in driver and workloads built plainly
# beside them (they leak on purpose); then the unit and integration tests run against that build (tests/sanitize.sh:
# through a shadow of this tree whose .output is that folder). Sanitizer reports go to
# files, so an error path that exits non-zero anyway cannot hide one: any report fails the
# run. test_package is left out: it builds its own binary, with Debian's flags.
# clang: with ASan and UBSan in one runtime, gcc's UBSan ignores log_path (reports only on
# stderr, where a test expecting an error exit would not notice one); clang's writes them.
# clang also finds failure paths of unit tests that free a never-set pointer
# (test_folded.c, test_trace.c, test_webconfig.c): warned about, not fatal, until fixed.
SAN_CC := $(CLANG) -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all \
	-fno-omit-frame-pointer -Wno-error=sometimes-uninitialized
sanitize: deps
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(SAN_OUTPUT)/build \
		$(patsubst $(OUTPUT)/%,$(SAN_OUTPUT)/build/%,$(FAKECUDA) $(APPS))
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(SAN_OUTPUT)/build CC="$(SAN_CC)" gpuprobe testbins
	$(Q)tests/sanitize.sh $(SAN_OUTPUT)

# vmtest, the suites on other kernels and on arm64 in QEMU (tests/vm/README.md): `make vmtest` boots Debian 12's 6.1 kernel on x86-64; `make vmtest ARCH=arm64` cross-
# builds gpuprobe, its BPF and the stand-in driver and workloads into .output/arm64 and
# boots Debian 12's arm64 kernel. Both run under TCG (no KVM needed) and take minutes,
# too long for CI's `make test`. VM_KERNEL=<linux-image package> picks another kernel.
VM_CROSS := ARCH=arm64 OUTPUT=$(OUTPUT)/arm64 CC=aarch64-linux-gnu-gcc

ifeq ($(ARCH),arm64)
vmtest: vmtest-deps
	$(Q)$(MAKE) --no-print-directory $(VM_CROSS) all
	$(Q)tests/vm/vmtest.sh arm64
else
vmtest: vmtest-deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/vm/vmtest.sh x86
endif

# docs/support-matrix.md's measured tables, regenerated from the run records that every
# full `make vmtest` (and `make support-matrix-native`, the suites on this machine's own
# kernel) saves in docs/vmruns/ (tests/vm/matrix.py); test_support_matrix fails when the
# page and the records differ.
support-matrix:
	$(Q)python3 tests/vm/matrix.py render

support-matrix-native: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/vm/native.sh
	$(Q)python3 tests/vm/matrix.py render

# Every CPython found (Debian's and pyenv's 3.10-3.13; CI has Debian's 3.11 only, which
# `make test` runs): the Python-frame checks of tests/stacks/test_stacks.py (the building
# blocks) and of tests/integration/test_leakstacks.py (gpuprobe --memleak).
PYSTACK_PYTHONS ?= $(wildcard /usr/bin/python3.1[0-9] /root/.pyenv/versions/3.1[0-3].*/bin/python3.1[0-3])
test-pystack-all: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)PYSTACK_ONLY=1 PYSTACK_PYTHONS="$(PYSTACK_PYTHONS)" python3 tests/stacks/test_stacks.py
	$(Q)PYSTACK_PYTHONS="$(PYSTACK_PYTHONS)" python3 tests/integration/test_leakstacks.py python_frames

# The README's and docs/' example outputs, probe counts and top captures, made by running
# the tool on the stand-in driver (root: it loads BPF); `make test` checks them.
docs: all
	$(call msg,DOCGEN,README.md docs/)
	$(Q)python3 tests/tools/docgen.py --write

# docs/metrics.md's family list, generated from the metric table (src/out/metrics.c);
# tests/unit/test_metrics_doc fails when they differ.
metrics-doc: $(OUTPUT)/unit/test_metrics_doc
	$(Q)$(OUTPUT)/unit/test_metrics_doc --write docs/metrics.md

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)


-include $(OBJS:.o=.d) $(BPF_OBJS:.o=.d) $(STK)/stackprobe.bpf.d
