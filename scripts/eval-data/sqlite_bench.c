/* A small SQLite workload for scripts/eval-layouts (issue #32: a real project built in
 * many layouts). An in-memory database: N rows inserted in one transaction through a
 * prepared statement, an index built, N/10 range queries through it, an update of a
 * tenth of the rows and a sort; the checksum printed keeps the compiler and SQLite
 * honest. Usage: sqlite_bench [N] (default 20000). Built with the amalgamation,
 * sqlite3.c, which scripts/eval-layouts takes from npm's better-sqlite3 package (or
 * the libsqlite3-sys crate's copy). -DEXTRA_SPIN=K adds K dependent multiplies per row
 * after the workload, a real change whose cost no layout moves (a latency-bound chain),
 * for the power checks of scripts/eval-layouts-auto (issue #42). */
#include <stdio.h>
#include <stdlib.h>
#include "sqlite3.h"

#ifndef EXTRA_SPIN
#define EXTRA_SPIN 0
#endif

__attribute__((noinline)) static unsigned long long extra_work(unsigned long long n) {
    unsigned long long x = 88172645463325252ull;
    for (unsigned long long i = 0; i < n; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static void check(int rc, sqlite3 *db, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "sqlite_bench: %s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    sqlite3 *db;
    sqlite3_stmt *st;
    check(sqlite3_open(":memory:", &db), db, "open");
    check(sqlite3_exec(db, "CREATE TABLE t(a INTEGER PRIMARY KEY, b INTEGER, c TEXT)", 0, 0, 0), db, "create");
    check(sqlite3_exec(db, "BEGIN", 0, 0, 0), db, "begin");
    check(sqlite3_prepare_v2(db, "INSERT INTO t(b, c) VALUES (?, ?)", -1, &st, 0), db, "prepare insert");
    unsigned x = 12345;
    char text[32];
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        snprintf(text, sizeof text, "row-%08x", x);
        sqlite3_bind_int(st, 1, (int)(x % 100000));
        sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
        check(sqlite3_step(st), db, "insert");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    check(sqlite3_exec(db, "COMMIT", 0, 0, 0), db, "commit");
    check(sqlite3_exec(db, "CREATE INDEX tb ON t(b)", 0, 0, 0), db, "index");
    check(sqlite3_prepare_v2(db, "SELECT count(*), sum(a) FROM t WHERE b BETWEEN ? AND ?", -1, &st, 0), db,
          "prepare select");
    long long sum = 0;
    for (int i = 0; i < n / 10; i++) {
        int lo = (i * 7919) % 100000;
        sqlite3_bind_int(st, 1, lo);
        sqlite3_bind_int(st, 2, lo + 500);
        check(sqlite3_step(st), db, "select");
        sum += sqlite3_column_int64(st, 0) + sqlite3_column_int64(st, 1);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    check(sqlite3_exec(db, "UPDATE t SET c = upper(c) WHERE a % 10 = 0", 0, 0, 0), db, "update");
    check(sqlite3_prepare_v2(db, "SELECT c FROM t ORDER BY c LIMIT 5", -1, &st, 0), db, "prepare sort");
    while (sqlite3_step(st) == SQLITE_ROW) sum += sqlite3_column_bytes(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    sum += (long long)(extra_work((unsigned long long)n * EXTRA_SPIN) & 1);
    printf("%lld\n", sum);
    return 0;
}
