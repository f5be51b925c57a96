# SPDX-License-Identifier: BSD-3-Clause
# gpuprobe: BPF objects (clang, CO-RE) -> skeletons (bpftool) -> the loader (gcc).
# `make V=1` shows the commands; `make STATIC=1` links a static binary for other hosts.

OUTPUT := .output
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
ARCH := x86

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS ?= -g -O2
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -fno-omit-frame-pointer -MMD -MP
SRC_DIRS := src/core src/out src/cli $(wildcard src/modes/*)
INCLUDES := -I$(OUTPUT) $(addprefix -I,$(SRC_DIRS)) -Ibpf
LIBS := -lbpf -lelf -lz -ljson-c -liberty -lpthread
LIBS += -lmicrohttpd -ldl # gpuprobe daemon (src/cli/daemon.c), gpuprobe check (src/cli/check.c)
ifeq ($(STATIC),1)
LDFLAGS += -static
LIBS += -lzstd -lpthread
endif

BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf -Wall -Werror -MMD -MP

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
SRCS := $(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.c))
OBJS := $(patsubst src/%.c,$(OUTPUT)/obj/%.o,$(SRCS))
LIB_OBJS := $(filter-out $(OUTPUT)/obj/cli/main.o,$(OBJS))

FAKECUDA := $(OUTPUT)/fakecuda/libcuda.so.1
APP_SRCS := $(filter-out tests/apps/common.c,$(wildcard tests/apps/*.c))
APPS := $(patsubst tests/apps/%.c,$(OUTPUT)/apps/%,$(APP_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNITS := $(patsubst tests/unit/%.c,$(OUTPUT)/unit/%,$(UNIT_SRCS))

# Debian packages the build and the tests need; `make deps` installs the missing ones.
DEB_PKGS := clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev libjson-c-dev \
	libiberty-dev gcc make util-linux procps
DEB_PKGS += libmicrohttpd-dev prometheus systemd # gpuprobe daemon; promtool, a server and systemd-analyze for its tests

.PHONY: all gpuprobe testbins test demo deps clean fuzz bundle
.SECONDARY:
.DEFAULT_GOAL := all

all: gpuprobe testbins

gpuprobe: $(OUTPUT)/gpuprobe

testbins: $(FAKECUDA) $(APPS) $(UNITS)

$(OUTPUT) $(OUTPUT)/obj $(OUTPUT)/fakecuda $(OUTPUT)/apps $(OUTPUT)/unit:
	$(Q)mkdir -p $@

# BPF objects depend on the headers they include (clang -MMD), skeletons on their object.
$(OUTPUT)/%.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MF $(OUTPUT)/$*.bpf.d -MT $@ -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# The skeletons are generated first (order-only); an object is rebuilt when a header it
# really includes changes, its own skeleton among them (-MMD).
$(OUTPUT)/obj/%.o: src/%.c | $(SKELS) $(OUTPUT)/obj
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -c $< -o $@

$(OUTPUT)/gpuprobe: $(OBJS)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@

# The stand-in driver: SONAME libcuda.so.1, cuda.h's signatures (tests/fakecuda/).
$(FAKECUDA): tests/fakecuda/fakecuda.c tests/fakecuda/fakecuda.h | $(OUTPUT)/fakecuda
	$(call msg,FAKECUDA,$@)
	$(Q)$(CC) -shared -fPIC -O1 -g -fno-omit-frame-pointer -fno-inline -Wall -Wextra -Werror \
		-Wl,-soname,libcuda.so.1 -o $@ $< -lpthread
	$(Q)ln -sf libcuda.so.1 $(OUTPUT)/fakecuda/libcuda.so

# Workloads: frame pointers and no inlining, so stacks name their functions.
$(OUTPUT)/apps/%: tests/apps/%.c tests/apps/common.c tests/apps/common.h $(FAKECUDA) | $(OUTPUT)/apps
	$(call msg,APP,$@)
	$(Q)$(CC) -O0 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -Itests/fakecuda -Itests/apps \
		-o $@ $< tests/apps/common.c -L$(OUTPUT)/fakecuda -l:libcuda.so.1 -lpthread \
		-Wl,-rpath,'$$ORIGIN/../fakecuda'

$(OUTPUT)/unit/%: tests/unit/%.c tests/unit/unit.h $(LIB_OBJS) | $(OUTPUT)/unit
	$(call msg,UNIT,$@)
	$(Q)$(CC) -O0 -g -fno-omit-frame-pointer -std=gnu11 -Wall -Wextra -Werror $(INCLUDES) \
		-Itests/unit -o $@ $< $(LIB_OBJS) $(LIBS)

deps:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# The README's test command: installs what is missing, builds, runs every suite.
test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/run.sh

# Runs gpuprobe on a bundled workload: real CUDA where a GPU and nvcc exist, else the
# stand-in driver.
demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)examples/demo.sh

# libFuzzer targets for the parsers of outside input (ELF files, /proc/PID/maps), seeded
# with a hand-made ELF, system libraries and real maps. FUZZ_SECONDS per target.
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_LIB := src/core/elfsym.c src/core/procmaps.c
fuzz: deps
	$(Q)$(MAKE) --no-print-directory $(OUTPUT)/unit/test_elfsym
	$(Q)mkdir -p $(OUTPUT)/fuzz/seed-elfsym $(OUTPUT)/fuzz/seed-procmaps
	$(Q)$(OUTPUT)/unit/test_elfsym --write-mini-elf $(OUTPUT)/fuzz/seed-elfsym/mini.elf
	$(Q)cp /lib/x86_64-linux-gnu/libdl.so.2 $(OUTPUT)/fuzz/seed-elfsym/ 2>/dev/null || true
	$(Q)cp /proc/self/maps $(OUTPUT)/fuzz/seed-procmaps/self.maps
	$(Q)for f in $(FUZZ_SRCS); do n=$$(basename $$f .c); s=$${n#fuzz_}; \
		clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/core -o $(OUTPUT)/fuzz/$$n $$f $(FUZZ_LIB) -lelf -lz || exit 1; \
		echo "  FUZZ     $$n ($${FUZZ_SECONDS:-30}s)"; \
		$(OUTPUT)/fuzz/$$n -max_total_time=$${FUZZ_SECONDS:-30} -print_final_stats=1 \
			$(OUTPUT)/fuzz/seed-$$s > $(OUTPUT)/fuzz/$$n.log 2>&1 || { tail -30 $(OUTPUT)/fuzz/$$n.log; exit 1; }; \
		grep -E "stat::number_of_executed_units" $(OUTPUT)/fuzz/$$n.log; \
	done

# A folder to carry to another host (the GPU machine has no package registry): a static
# gpuprobe, with the GPU test scripts beside it.
bundle: $(OUTPUT)/bundle/gpuprobe $(OUTPUT)/bundle/dyn/gpuprobe

# The dynamically linked build with its libraries beside it (glibc excepted: the target's
# is newer): `gpuprobe check` needs it to load a real driver, which static glibc cannot host.
$(OUTPUT)/bundle/dyn/gpuprobe: $(OUTPUT)/gpuprobe
	$(call msg,BUNDLE,$@)
	$(Q)rm -rf $(OUTPUT)/bundle/dyn && mkdir -p $(OUTPUT)/bundle/dyn/lib
	$(Q)cp $< $@
	$(Q)ldd $< | awk '$$3 ~ /^\// {print $$3}' | grep -v -E '/(libc|libm|libpthread|libdl|ld-linux[^/]*)\.so' | \
		xargs -r -I{} cp -L {} $(OUTPUT)/bundle/dyn/lib/
	$(Q)printf '#!/bin/sh\nd=$$(dirname "$$0")\nLD_LIBRARY_PATH="$$d/lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" exec "$$d/gpuprobe" "$$@"\n' > $(OUTPUT)/bundle/dyn/run && chmod +x $(OUTPUT)/bundle/dyn/run

$(OUTPUT)/bundle/gpuprobe: $(OBJS) src/static/mhd_notls.c
	$(call msg,STATIC,$@)
	$(Q)mkdir -p $(OUTPUT)/bundle
	$(Q)$(CC) $(CFLAGS) -static $^ $(LIBS) -lzstd -lpthread -o $@ 2>&1 | \
		grep -v "statically linked applications requires at runtime" | grep -v "in function" || true
	$(Q)test -x $@

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)

-include $(OBJS:.o=.d) $(BPF_OBJS:.o=.d)

# Benchmarks on the stand-in driver with real BPF (bench/run.py, root): per-call cost against
# an empty uprobe, bpftrace and LD_PRELOAD, attach time, RSS over BENCH_SOAK_SECONDS (60),
# ring-buffer rate. Writes docs/benchmarks.md; installs bpftrace with apt if it is missing.
.PHONY: bench
bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)python3 bench/run.py

# ==== vmtest: the suites on other kernels and on arm64, in QEMU (tests/vm/README.md) ====
# `make vmtest` boots Debian 12's 6.1 kernel on x86-64; `make vmtest ARCH=arm64` cross-
# builds gpuprobe, its BPF and the stand-in driver and workloads into .output/arm64 and
# boots Debian 12's arm64 kernel. Both run under TCG (no KVM needed) and take minutes,
# too long for CI's `make test`. VM_KERNEL=<linux-image package> picks another kernel.
VM_DEB_PKGS := qemu-system-x86 qemu-system-arm busybox-static cpio kmod xz-utils zstd binutils
VM_ARM64_DEB_PKGS := mmdebstrap gcc-aarch64-linux-gnu libc6-dev:arm64 libbpf-dev:arm64 \
	libelf-dev:arm64 zlib1g-dev:arm64 libzstd-dev:arm64 libjson-c-dev:arm64 \
	libiberty-dev:arm64 libmicrohttpd-dev:arm64
VM_CROSS := ARCH=arm64 OUTPUT=$(OUTPUT)/arm64 CC=aarch64-linux-gnu-gcc

.PHONY: vmtest vmtest-deps
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

ifeq ($(ARCH),arm64)
vmtest: vmtest-deps
	$(Q)$(MAKE) --no-print-directory $(VM_CROSS) all
	$(Q)tests/vm/vmtest.sh arm64
else
vmtest: vmtest-deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/vm/vmtest.sh x86
endif
# ==== end of vmtest ====
