/* A starter bot in C for the arena's line protocol (docs/bots.md, "Bots that read and write lines").
 * Standard library only. It reads one JSON object a line on stdin and answers each "turn" line with a
 * random legal action and a short note. It asks for a process of its own per match ("matches": "one"), so
 * it may keep whatever it likes in globals; stdin closes after the match, and it exits.
 *
 *   gcc -O2 -o bot docs/examples/c-bot/bot.c
 *   arena play --stdio ./bot --vs random --game shanghaien
 *   arena bot check --stdio ./bot
 *
 * The adapter writes every turn line with the match, seat, ply and legal actions before the view, so a
 * plain scan for the first "seat": finds the turn's own seat, not the view's. Strings are copied as they
 * are written (escapes included), which is also how they must be written back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LEGAL 512

/* The raw text of the string value of "key" (first occurrence), copied into out; 0 if absent. */
static int string_field(const char *line, const char *key, char *out, size_t size) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *p = strstr(line, pattern);
    if (p == NULL) return 0;
    p += strlen(pattern);
    size_t n = 0;
    while (*p && *p != '"' && n + 1 < size) {
        if (*p == '\\' && p[1] && n + 2 < size) out[n++] = *p++;
        out[n++] = *p++;
    }
    out[n] = '\0';
    return 1;
}

/* The number value of "key" (first occurrence); fallback if absent. */
static long number_field(const char *line, const char *key, long fallback) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *p = strstr(line, pattern);
    return p == NULL ? fallback : strtol(p + strlen(pattern), NULL, 10);
}

/* Pointers to the raw strings of the "legal" array, terminated in place; the count. */
static int legal_actions(char *line, char **legal) {
    char *p = strstr(line, "\"legal\":[");
    int n = 0;
    if (p == NULL) return 0;
    p += strlen("\"legal\":[");
    while (*p == '"' && n < MAX_LEGAL) {
        char *start = ++p;
        while (*p && *p != '"') p += (*p == '\\' && p[1]) ? 2 : 1;
        if (*p != '"') break;
        *p++ = '\0';
        legal[n++] = start;
        if (*p == ',') p++;
    }
    return n;
}

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    char match[256], game[64];
    char *legal[MAX_LEGAL];
    long turns = 0;

    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    setvbuf(stdout, NULL, _IOLBF, 0); /* a line leaves as soon as it is written */
    printf("{\"type\":\"hello\",\"protocol\":1,\"matches\":\"one\"}\n");

    while (getline(&line, &cap, stdin) != -1) {
        char type[32];
        if (!string_field(line, "type", type, sizeof type)) continue;
        if (strcmp(type, "start") == 0) {
            string_field(line, "game", game, sizeof game);
            fprintf(stderr, "c-bot: a %s match starts\n", game);
        } else if (strcmp(type, "turn") == 0) {
            long seat = number_field(line, "seat", 0), ply = number_field(line, "ply", 0);
            string_field(line, "match", match, sizeof match);
            int n = legal_actions(line, legal);
            if (n == 0) continue; /* cannot happen: every turn has a legal action */
            int pick = rand() % n;
            printf("{\"match\":\"%s\",\"seat\":%ld,\"ply\":%ld,\"action\":\"%s\",\"note\":\"random %d of %d\"}\n",
                   match, seat, ply, legal[pick], pick + 1, n);
            turns++;
        } else if (strcmp(type, "refused") == 0) {
            fprintf(stderr, "c-bot: refused: %s", line);
        } else if (strcmp(type, "end") == 0) {
            fprintf(stderr, "c-bot: the match ended after %ld turns of mine\n", turns);
        }
    }
    free(line);
    return 0;
}
