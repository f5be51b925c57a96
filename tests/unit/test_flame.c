/* SPDX-License-Identifier: BSD-3-Clause */
/* The flame graph SVG: parsed back as XML by python3 and checked frame by frame against the
 * folded input (tests/tools/check_flame.py), hostile frame text escaped, bounded options,
 * and the embedded script run in headless Chromium (zoom, search, the picture). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "out/flame.h"
#include "cli/flame_cmd.h"
#include "out/folded.h"
#include "unit.h"

#define PLEN 512
static char tools[PLEN];	/* tests/tools, found from this binary's path */
static char tmpdir[] = "/tmp/gp-flame-XXXXXX";
static char last_out[8192];	/* what the last run() printed, its tail */

/* tests/tools beside this binary's .output/unit, or under the working directory (a build
 * elsewhere, e.g. with sanitizers) */
static void find_tools(void)
{
	char exe[PLEN - 16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *p;

	snprintf(tools, sizeof(tools), "tests/tools");
	if (n <= 0)
		return;
	exe[n] = '\0';
	for (int i = 0; i < 3 && (p = strrchr(exe, '/')); i++)
		*p = '\0';
	snprintf(tools, sizeof(tools), "%s/tests/tools", exe);
	if (access(tools, F_OK))
		snprintf(tools, sizeof(tools), "tests/tools");
}

/* Runs a shell command; returns its exit status, its output's tail in last_out. */
static int run(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0, k;
	char buf[4096];
	int st;

	last_out[0] = '\0';
	if (!p)
		return -1;
	while ((k = fread(buf, 1, sizeof(buf), p)) > 0) {
		if (k >= sizeof(last_out))
			k = sizeof(last_out) - 1;
		if (n + k >= sizeof(last_out)) {
			memmove(last_out, last_out + (n + k - (sizeof(last_out) - 1)), sizeof(last_out) - 1 - k);
			n = sizeof(last_out) - 1 - k;
		}
		memcpy(last_out + n, buf, k);
		n += k;
		last_out[n] = '\0';
	}
	st = pclose(p);
	if (st && n)
		printf("#   %s\n#   -> %s", cmd, last_out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* Writes f as folded text to NAME.folded, renders it to NAME.svg. */
static int render_files(struct folded *f, const struct flame_opts *o, const char *name, char *svg,
			size_t svg_len, char *fold, size_t fold_len)
{
	char n1[64], n2[64];
	FILE *a, *b;
	int r;

	snprintf(n1, sizeof(n1), "%s.folded", name);
	snprintf(n2, sizeof(n2), "%s.svg", name);
	tmp_path(fold, fold_len, n1);
	tmp_path(svg, svg_len, n2);
	a = fopen(fold, "w");
	b = fopen(svg, "w");
	if (!a || !b)
		return -errno;
	r = folded__write(f, a);
	if (!r)
		r = flame__render(f, o, b);
	fclose(a);
	fclose(b);
	return r;
}

static int check_flame(const char *svg, const char *extra)
{
	char cmd[PLEN * 8];

	snprintf(cmd, sizeof(cmd), "python3 %s/check_flame.py %s %s 2>&1", tools, svg, extra);
	return run(cmd);
}

static struct folded *sample(void)
{
	struct folded *f = folded__new();
	const char *a[] = { "cuMemAlloc_v2+0x1a (libcuda.so.1)", "cudaMalloc (libcudart.so.13)",
			    "alloc_buffers (app.c:10)", "main (app.c:40)" };
	const char *b[] = { "cuMemAlloc_v2+0x1a (libcuda.so.1)", "cudaMalloc (libcudart.so.13)",
			    "grow_cache (app.c:20)", "main (app.c:40)" };
	const char *c[] = { "cuMemAlloc_v2+0x1a (libcuda.so.1)", "c10::cuda::CUDACachingAllocator::malloc",
			    "forward (model.py:88)", "train (train.py:12)", "main (app.c:40)" };
	/* "main" alone, "main x" and "main;..." are not adjacent in byte order: one frame all
	 * the same */
	const char *d[] = { "main" }, *e[] = { "y", "main x" }, *g[] = { "z", "main" };

	if (!f)
		return NULL;
	folded__add(f, a, 4, 2048000);
	folded__add(f, b, 4, 4096000);
	folded__add(f, c, 5, 8000000);
	folded__add(f, a, 4, 1000);
	folded__add(f, d, 1, 300000);
	folded__add(f, e, 2, 200000);
	folded__add(f, g, 2, 100000);
	return f;
}

static void test_render_matches_folded(void)
{
	struct folded *f = sample();
	char svg[PLEN], fold[PLEN];

	if (!ASSERT_TRUE(f, "sample_made"))
		goto cleanup;
	if (!ASSERT_EQ(render_files(f, NULL, "sample", svg, sizeof(svg), fold, sizeof(fold)), 0, "sample_rendered"))
		goto cleanup;
	if (!ASSERT_EQ(check_flame(svg, "--folded"), 2, "folded_checked"))
		goto cleanup; /* a missing argument: the checker's usage */
	{
		char extra[PLEN + 16];

		snprintf(extra, sizeof(extra), "--folded %s", fold);
		if (!ASSERT_EQ(check_flame(svg, extra), 0, "sample_checked"))
			goto cleanup;
	}
	/* 15 paths ("main x" and "main" are two frames, "main" one) plus "all" */
	if (!ASSERT_STR_CONTAINS(last_out, "\"frames\": 16", "contains frames: 16"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(last_out, "\"total\": 14745000", "contains total: 14745000"))
		goto cleanup;
cleanup:
	folded__free(f);
}

static void test_hostile_text_is_escaped(void)
{
	struct folded *f = folded__new();
	const char *a[] = { "<script>alert(1)</script>", "a&b \"q\" 'r' ]]> -->", "\x01\x1b[2J\xff\xfe",
			    "<!-- x", "&amp; &#0; &lt;" };
	struct flame_opts o = { .title = "</text><script>alert(2)</script> & \x07\xc3" };
	char svg[PLEN], fold[PLEN], extra[PLEN + 16], cmd[PLEN * 8];

	if (!ASSERT_TRUE(f, "folded_made"))
		goto cleanup;
	if (!ASSERT_EQ(folded__add(f, a, 5, 1000), 0, "hostile_added"))
		goto cleanup;
	if (!ASSERT_EQ(render_files(f, &o, "hostile", svg, sizeof(svg), fold, sizeof(fold)), 0, "hostile_rendered"))
		goto cleanup;
	snprintf(extra, sizeof(extra), "--folded %s", fold);
	/* the names parsed out of the SVG equal the folded frames: escaped, never cut short */
	if (!ASSERT_EQ(check_flame(svg, extra), 0, "hostile_checked"))
		goto cleanup;
	/* exactly one script element: the graph's own */
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot();"
		 "n=\"{http://www.w3.org/2000/svg}\"; print(len(list(r.iter(n+\"script\"))),"
		 "r.find(n+\"text\").text)' %s", svg);
	if (!ASSERT_EQ(run(cmd), 0, "svg_parsed"))
		goto cleanup;
	if (!ASSERT_STR_EQ(last_out, "1 </text><script>alert(2)</script> & ??\n", "title_escaped"))
		goto cleanup;
cleanup:
	folded__free(f);
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t next64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Thousands of stacks, skewed values: narrow frames are left out, every wide one drawn. */
static void test_many_stacks(void)
{
	struct folded *f = folded__new();
	char svg[PLEN], fold[PLEN], extra[PLEN + 16], names[64][32];
	unsigned frames = 0, paths = 0;
	const char *p;

	if (!ASSERT_TRUE(f, "folded_made"))
		goto cleanup;
	for (int i = 0; i < 64; i++)
		snprintf(names[i], sizeof(names[i]), "fn_%02d (lib%d.so)", i, i % 5);
	for (int i = 0; i < 20000; i++) {
		const char *fr[40];
		size_t depth = 1 + next64() % 40;
		uint64_t v = (next64() % 1000) * (i % 100 == 0 ? 100000 : 1) + 1;

		for (size_t d = 0; d < depth; d++)
			fr[d] = names[next64() % (d < 3 ? 4 : 64)];
		if (!ASSERT_EQ(folded__add(f, fr, depth, v), 0, "random_added"))
			goto cleanup;
	}
	if (!ASSERT_EQ(render_files(f, NULL, "many", svg, sizeof(svg), fold, sizeof(fold)), 0, "many_rendered"))
		goto cleanup;
	snprintf(extra, sizeof(extra), "--folded %s", fold);
	if (!ASSERT_EQ(check_flame(svg, extra), 0, "many_checked"))
		goto cleanup;
	p = strstr(last_out, "\"frames\": ");
	if (!ASSERT_TRUE(p && sscanf(p, "\"frames\": %u", &frames) == 1, "p && sscanf(p, frames: %u, &frames) == 1"))
		goto cleanup;
	p = strstr(last_out, "\"paths\": ");
	if (!ASSERT_TRUE(p && sscanf(p, "\"paths\": %u", &paths) == 1, "p && sscanf(p, paths: %u, &paths) == 1"))
		goto cleanup;
	printf("#   %u paths, %u drawn\n", paths, frames);
	if (!ASSERT_TRUE(frames > 1000 && frames - 1 < paths, "paths_in_report"))
		goto cleanup;
cleanup:
	folded__free(f);
}

static void test_empty_and_bounds(void)
{
	struct folded *f = folded__new();
	struct flame_opts narrow = { .width = FLAME_WIDTH_MIN - 1 }, wide = { .width = FLAME_WIDTH_MAX + 1 };
	struct flame_opts ok = { .width = FLAME_WIDTH_MIN, .unit = "samples" };
	char svg[PLEN], fold[PLEN], cmd[PLEN * 8];
	const char *one[] = { "only" };
	FILE *null = fopen("/dev/null", "w");

	if (!ASSERT_TRUE(f && null, "files_opened"))
		goto cleanup;
	if (!ASSERT_EQ(flame__render(f, &narrow, null), -EINVAL, "narrow_refused"))
		goto cleanup;
	if (!ASSERT_EQ(flame__render(f, &wide, null), -EINVAL, "wide_drawn"))
		goto cleanup;
	fclose(null);
	if (!ASSERT_EQ(render_files(f, NULL, "empty", svg, sizeof(svg), fold, sizeof(fold)), 0, "empty_rendered"))
		goto cleanup;
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot();"
		 "n=\"{http://www.w3.org/2000/svg}\"; print(len([g for g in r.iter(n+\"g\") if g.get(\"class\")==\"f\"]),"
		 "\"no stacks\" in E.tostring(r, encoding=\"unicode\"))' %s", svg);
	if (!ASSERT_EQ(run(cmd), 0, "empty_parsed"))
		goto cleanup;
	if (!ASSERT_STR_EQ(last_out, "0 True\n", "no_stacks_said"))
		goto cleanup;
	if (!ASSERT_EQ(folded__add(f, one, 1, 42), 0, "one_added"))
		goto cleanup;
	if (!ASSERT_EQ(render_files(f, &ok, "narrow", svg, sizeof(svg), fold, sizeof(fold)), 0, "narrow_ok_rendered"))
		goto cleanup;
	if (!ASSERT_EQ(check_flame(svg, ""), 0, "narrow_checked"))
		goto cleanup;
	snprintf(cmd, sizeof(cmd), "grep -c '42 samples, 100.00%%' %s; grep -o 'width=\"200\"' %s | head -1", svg, svg);
	if (!ASSERT_EQ(run(cmd), 0, "one_sample_found"))
		goto cleanup;
	if (!ASSERT_STR_EQ(last_out, "2\nwidth=\"200\"\n", "one_sample_width"))
		goto cleanup;
cleanup:
	folded__free(f);
}

/* flame__main with stdout and stderr sent to files; returns its exit status. */
static int flame_main(char **argv, const char *out, const char *err)
{
	int argc = 0, so = dup(1), se = dup(2), fo, fe, r;

	while (argv[argc])
		argc++;
	fflush(stdout);
	fflush(stderr);
	fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fo, 1);
	dup2(fe, 2);
	r = flame__main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	close(fo);
	close(fe);
	return r;
}

static void test_main(void)
{
	char out[PLEN], err[PLEN], in[PLEN], cmd[PLEN * 8];
	FILE *f;

	tmp_path(out, sizeof(out), "main.svg");
	tmp_path(err, sizeof(err), "main.err");
	tmp_path(in, sizeof(in), "main.folded");
	f = fopen(in, "w");
	if (!ASSERT_TRUE(f, "input_opened"))
		goto cleanup;
	fputs("main;work 100\nmain;idle 50\nthis line is broken\nmain;work 20\n", f);
	fclose(f);
	{
		char *argv[] = { "flame", "--help", NULL };

		if (!ASSERT_EQ(flame_main(argv, out, err), 0, "help_exit"))
			goto cleanup;
		snprintf(cmd, sizeof(cmd), "head -1 %s; wc -c < %s", out, err);
		if (!ASSERT_EQ(run(cmd), 0, "help_output_read"))
			goto cleanup;
		if (!ASSERT_STR_CONTAINS(last_out, "Usage: gpuprobe flame [OPTION...] FOLDED > graph.svg", "contains Usage: gpuprobe flame [--title TEXT] [--width PI..."))
			goto cleanup;
		if (!ASSERT_STR_CONTAINS(last_out, "\n0\n", "contains 0"))
			goto cleanup;
	}
	{
		char *argv[] = { "flame", "--width", "50", in, NULL };

		if (!ASSERT_EQ(flame_main(argv, out, err), 2, "width_exit"))
			goto cleanup;
		snprintf(cmd, sizeof(cmd), "cat %s", err);
		run(cmd);
		if (!ASSERT_STR_EQ(last_out, "gpuprobe: flame: invalid --width: 50 (an integer from 200 to 20000)\n", "width_error"))
			goto cleanup;
	}
	{
		char *argv[] = { "flame", in, in, NULL };

		if (!ASSERT_EQ(flame_main(argv, out, err), 2, "two_inputs_exit"))
			goto cleanup;
	}
	{
		char *argv[] = { "flame", "--bogus", in, NULL };

		if (!ASSERT_EQ(flame_main(argv, out, err), 2, "bogus_option_exit"))
			goto cleanup;
	}
	{
		char *argv[] = { "flame", "/nonexistent/x.folded", NULL };

		if (!ASSERT_EQ(flame_main(argv, out, err), 1, "missing_input_exit"))
			goto cleanup;
		snprintf(cmd, sizeof(cmd), "cat %s", err);
		run(cmd);
		if (!ASSERT_STR_EQ(last_out, "gpuprobe: flame: /nonexistent/x.folded: No such file or directory\n", "missing_input_error"))
			goto cleanup;
	}
	{
		char *argv[] = { "flame", "--title", "Work", "--width", "800", in, NULL };

		if (!ASSERT_EQ(flame_main(argv, out, err), 0, "title_width_exit"))
			goto cleanup;
		snprintf(cmd, sizeof(cmd), "cat %s", err);
		run(cmd);
		if (!ASSERT_STR_CONTAINS(last_out, "skipped 1 of 4 lines (first: line 3,", "contains skipped 1 of 4 lines (first: line 3,"))
			goto cleanup;
		if (!ASSERT_EQ(check_flame(out, ""), 0, "main_output_checked"))
			goto cleanup;
		if (!ASSERT_STR_CONTAINS(last_out, "\"total\": 170", "contains total: 170"))
			goto cleanup;
		snprintf(cmd, sizeof(cmd), "grep -c '<text id=\"fg-title\" x=\"400\" y=\"24\" text-anchor=\"middle\">Work</text>' %s", out);
		if (!ASSERT_EQ(run(cmd), 0, "title_found"))
			goto cleanup;
	}
cleanup:;
}

/* The embedded script, run by a real browser: opened zoomed on a frame and searched, it
 * leaves the document as check_flame.py --dom expects; the picture shows the frames. */
static void test_chromium_runs_the_script(void)
{
	const char *no_browser = getenv("GP_NO_BROWSER"); /* tests/vm/guest.sh: why not */
	struct folded *f = NULL;
	char svg[PLEN], fold[PLEN], png[PLEN], dom[PLEN], cmd[PLEN * 8];
	char frag[64] = "";
	unsigned long long s = 0;

	if (no_browser && *no_browser)
		UNIT_SKIP(no_browser);
	f = sample();
	if (!ASSERT_TRUE(f, "sample_made"))
		goto cleanup;
	if (!ASSERT_EQ(render_files(f, NULL, "chromium", svg, sizeof(svg), fold, sizeof(fold)), 0, "chromium_rendered"))
		goto cleanup;
	/* zoom on the grow_cache frame, wherever the layout put it */
	snprintf(cmd, sizeof(cmd), "grep -o 'data-s=\"[0-9]*\" data-v=\"4096000\" data-d=\"2\"' %s", svg);
	if (!ASSERT_EQ(run(cmd), 0, "zoom_frame_found"))
		goto cleanup;
	if (!ASSERT_TRUE(sscanf(last_out, "data-s=\"%llu\"", &s) == 1, "sscanf(last_out, data-s=%llu, &s) == 1"))
		goto cleanup;
	snprintf(frag, sizeof(frag), "x=%llu&d=2&s=cuMem|main$", s);
	tmp_path(dom, sizeof(dom), "chromium.dom");
	snprintf(cmd, sizeof(cmd), "%s/svg2png.sh --dom %s '%s' > %s && python3 %s/check_flame.py --dom %s --zoom %llu,2 --search 'cuMem|main$' 2>&1",
		 tools, svg, frag, dom, tools, dom, s);
	if (!ASSERT_EQ(run(cmd), 0, "chromium_dom"))
		goto cleanup;
	/* grow_cache and its two callees, its two ancestors; the main frame of "main" matches */
	if (!ASSERT_STR_CONTAINS(last_out, "\"zoom_shown\": 3, \"zoom_hidden\": 11, \"zoom_ancestors\": 2", "contains zoom_shown: 3, zoom_hidden: 11, zoom_ancestors: 2"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(last_out, "\"matched_sum\": 14545000", "contains matched_sum: 14545000"))
		goto cleanup;
	tmp_path(png, sizeof(png), "chromium.png");
	snprintf(cmd, sizeof(cmd), "%s/svg2png.sh %s %s >/dev/null && python3 %s/check_flame.py %s --png %s 2>&1",
		 tools, svg, png, tools, svg, png);
	if (!ASSERT_EQ(run(cmd), 0, "chromium_png"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(last_out, "\"png\": [1200, ", "contains png: [1200,"))
		goto cleanup;
cleanup:
	folded__free(f);
}

int main(void)
{
	char cmd[64];

	find_tools();
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_render_matches_folded);
	RUN_TEST(test_hostile_text_is_escaped);
	RUN_TEST(test_many_stacks);
	RUN_TEST(test_empty_and_bounds);
	RUN_TEST(test_main);
	RUN_TEST(test_chromium_runs_the_script);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		printf("# could not remove %s\n", tmpdir);
	return unit_done();
}
