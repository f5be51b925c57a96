/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The metric table (src/out/metrics.c) against Prometheus's naming rules, and
 * docs/metrics.md's family list against the table: the list is generated from it, so the
 * two cannot drift. `test_metrics_doc --write [FILE]` rewrites the generated part
 * (`make metrics-doc`). Run from the repository's root (tests/run.sh does).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "out/metrics.h"
#include "unit.h"

#define DOC "docs/metrics.md"
#define BEGIN "<!-- BEGIN FAMILIES (generated from src/out/metrics.c; make metrics-doc) -->\n"
#define END "<!-- END FAMILIES -->\n"

static char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len), *in = fopen(path, "re");
	char chunk[4096];
	size_t n;

	if (!out || !in) {
		if (out)
			fclose(out);
		if (in)
			fclose(in);
		free(buf);
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0)
		fwrite(chunk, 1, n, out);
	fclose(in);
	fclose(out);
	return buf;
}

static char *generated(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	gp_metrics__doc(f);
	fclose(f);
	return buf;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static bool identifier(const char *s, size_t n)
{
	if (!n || (!isalpha((unsigned char)s[0]) && s[0] != '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

/* Every name of list ("a,b") an identifier and, with within, one of within's. */
static bool labels_ok(const char *list, const char *within)
{
	for (const char *s = list; s && *s;) {
		size_t n = strcspn(s, ",");
		char name[64];

		if (!identifier(s, n) || n >= sizeof(name))
			return false;
		snprintf(name, sizeof(name), "%.*s", (int)n, s);
		if (within) {
			bool found = false;

			for (const char *w = within; *w && !found;) {
				size_t k = strcspn(w, ",");

				found = k == n && !strncmp(w, name, n);
				w += k + (w[k] == ',');
			}
			if (!found)
				return false;
		}
		s += n + (s[n] == ',');
	}
	return true;
}

/* Prometheus's rules: counters end in _total, nothing else does; a unit before it in
 * the plural base unit (seconds, bytes); histograms of time end in _seconds. */
static void test_table_follows_the_naming_rules(void)
{
	for (int i = 0; gp_metrics[i].name; i++) {
		const struct gp_metric *m = &gp_metrics[i];
		char what[160];

		snprintf(what, sizeof(what), "%s", m->name);
		if (!ASSERT_TRUE(identifier(m->name, strlen(m->name)), what) ||
		    !ASSERT_TRUE(!strncmp(m->name, "gpuprobe_", 9) || !strncmp(m->name, "process_", 8), what) ||
		    !ASSERT_EQ(gp_metric__find(m->name), i, what) ||
		    !ASSERT_EQ(ends_with(m->name, "_total"), m->type == GP_COUNTER, what) ||
		    !ASSERT_TRUE(m->type != GP_HISTOGRAM || ends_with(m->name, "_seconds"), what) ||
		    !ASSERT_TRUE(!strstr(m->name, "_seconds_") || ends_with(m->name, "_seconds_total"), what) ||
		    !ASSERT_TRUE(!strstr(m->name, "_bytes_") || ends_with(m->name, "_bytes_total"), what) ||
		    !ASSERT_TRUE(m->help && m->help[0] && !strchr(m->help, '\n') && !strchr(m->help, '\\'), what) ||
		    !ASSERT_TRUE(m->with != NULL && m->labels != NULL, what) ||
		    !ASSERT_TRUE(labels_ok(m->labels, NULL), what) ||
		    !ASSERT_TRUE(!m->capped || labels_ok(m->capped, m->labels), what) ||
		    !ASSERT_TRUE(!m->capped || (m->flags & GP_M_PROCESS), what))
			return;
	}
}

static void test_doc_matches_the_table(void)
{
	char *doc = slurp(DOC), *gen = generated(), *b, *e;

	if (!ASSERT_TRUE(doc != NULL, DOC " readable (run from the repository's root)") ||
	    !ASSERT_TRUE(gen != NULL, "generated"))
		goto cleanup;
	b = strstr(doc, BEGIN);
	e = b ? strstr(b, END) : NULL;
	if (!ASSERT_TRUE(b && e, "the markers of the generated part"))
		goto cleanup;
	b += strlen(BEGIN);
	*e = '\0';
	if (!ASSERT_STR_EQ(b, gen, DOC " lists the families of src/out/metrics.c (make metrics-doc)"))
		goto cleanup;
	for (int i = 0; gp_metrics[i].name; i++) {
		char row[200];

		snprintf(row, sizeof(row), "| `%s` |", gp_metrics[i].name);
		if (!ASSERT_STR_CONTAINS(gen, row, "one row per family"))
			goto cleanup;
	}
cleanup:
	free(doc);
	free(gen);
}

/* --write [FILE]: the generated part replaced in FILE (docs/metrics.md). */
static int write_doc(const char *path)
{
	char *doc = slurp(path), *gen = generated(), *b, *e;
	FILE *f = NULL;
	int r = 1;

	if (!doc || !gen || !(b = strstr(doc, BEGIN)) || !(e = strstr(b, END))) {
		fprintf(stderr, "%s: no %s ... %s markers\n", path, BEGIN, END);
		goto cleanup;
	}
	b += strlen(BEGIN);
	f = fopen(path, "we");
	if (!f)
		goto cleanup;
	fwrite(doc, 1, (size_t)(b - doc), f);
	fputs(gen, f);
	fputs(e, f);
	r = fclose(f) ? 1 : 0;
	printf("wrote the families of src/out/metrics.c into %s\n", path);
cleanup:
	free(doc);
	free(gen);
	return r;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--write"))
		return write_doc(argc > 2 ? argv[2] : DOC);
	unit_select(argc, argv);
	RUN_TEST(test_table_follows_the_naming_rules);
	RUN_TEST(test_doc_matches_the_table);
	return unit_done();
}
