/* The floor of an RL-shaped command through the module API: a bench-only module
 * (never shipped) that makes exactly the key-API calls RL's string-state commands
 * make, and nothing else, so `make bench` can show how close RL gets to what the
 * module API allows.
 *
 *   FLOOR.FIXED key limit window          a fixed-window counter (RL.FIXED's calls)
 *   FLOOR.GCRA  key capacity tokens period a TAT in ns (RL.GCRA's calls)
 *   FLOOR.BUCKET key capacity tokens period a hash {tokens, ts} (RL.BUCKET's calls)
 *   FLOOR.ACQUIRE key limit ttl id          a sorted set of leases (RL.ACQUIRE's calls)
 *   FLOOR.PENALTY key strikes window block max
 *                                           "<count> <window_end> <level> <blocked_until>"
 *                                           (RL.PENALTY's calls: one strike a call)
 *
 * Each call: parse the numbers, read the clock once, open the key for reading and
 * writing, read its type, its string (DMA) and its absolute expiry, decide, write
 * the new digits (in place when the length is unchanged, else DeleteKey +
 * StringTruncate + DMA, as src/storage/record.rs does), set the absolute expiry,
 * propagate `SET key value PXAT t`, fire the `set` and `expire` keyspace events,
 * signal the key modified, reply with five integers. FLOOR.BUCKET instead reads
 * both fields with one HashGet, writes both with one HashSet, and propagates
 * `HSET key tokens x ts t` + `PEXPIREAT key t` (events `hset`, `expire`). FLOOR.ACQUIRE
 * reads the sorted set in place as RL.ACQUIRE does (its edge scores, its size, the
 * leases ended by now, the caller's score, the latest end), removes the ended leases
 * one by one, adds or renews the lease with ZsetAdd, sets the absolute expiry and
 * propagates `ZREMRANGEBYSCORE key -inf now` (when leases ended), `ZADD key end id` and
 * `PEXPIREAT key t` (events `zremrangebyscore`, `zadd`, `expire`). FLOOR.PENALTY
 * reads its four fields from the string (no expiry: the value holds absolute times),
 * records the strike (or blocks, doubling the block per level up to max), writes
 * the four fields back with the expiry at which the state would be initial again,
 * and writes nothing while the key is blocked. No validation beyond
 * what keeps it from crashing, no ERR texts, no counters: a floor, not a limiter.
 *
 * Built by scripts/floor.sh with the redismodule.h of the redis-module crate RL
 * is built against. */
#include <stdint.h>
#include <string.h>

#include "redismodule.h"

static RedisModuleString *pxat, *f_tokens, *f_ts;

/* digits with an optional unit (ms, s, m, h, d); a bare number is seconds. */
static int parse_ms(RedisModuleString *arg, long long *out) {
    size_t len;
    const char *p = RedisModule_StringPtrLen(arg, &len);
    size_t i = 0;
    unsigned long long n = 0;
    while (i < len && p[i] >= '0' && p[i] <= '9') n = n * 10 + (unsigned)(p[i++] - '0');
    if (i == 0) return 0;
    long long unit = 1000;
    size_t rest = len - i;
    if (rest == 1 && (p[i] | 32) == 's') unit = 1000;
    else if (rest == 1 && (p[i] | 32) == 'm') unit = 60000;
    else if (rest == 1 && (p[i] | 32) == 'h') unit = 3600000;
    else if (rest == 1 && (p[i] | 32) == 'd') unit = 86400000;
    else if (rest == 2 && (p[i] | 32) == 'm' && (p[i + 1] | 32) == 's') unit = 1;
    else if (rest != 0) return 0;
    *out = (long long)n * unit;
    return *out > 0;
}

static int parse_u64(const char *p, size_t len, unsigned long long *out) {
    unsigned long long n = 0;
    if (len == 0 || len > 19) return 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        n = n * 10 + (unsigned)(p[i] - '0');
    }
    *out = n;
    return 1;
}

static size_t format_u64(char *buf, unsigned long long v) {
    char tmp[24];
    size_t n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    for (size_t i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
    return n;
}

/* Reads the string state: 1 with value and expiry, 0 for an empty key, -1 for
 * another type or content. */
static int load(RedisModuleKey *key, int type, unsigned long long *value, long long *expires) {
    if (type == REDISMODULE_KEYTYPE_EMPTY) return 0;
    if (type != REDISMODULE_KEYTYPE_STRING) return -1;
    size_t len;
    char *p = RedisModule_StringDMA(key, &len, REDISMODULE_READ);
    if (!p || !parse_u64(p, len, value)) return -1;
    *expires = RedisModule_GetAbsExpire(key);
    return *expires == REDISMODULE_NO_EXPIRE ? -1 : 1;
}

/* Writes the digits, the absolute expiry, propagates and notifies. */
static int store(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleKey *key, int type,
                 const char *digits, size_t n, long long at) {
    int resize = 1;
    if (type == REDISMODULE_KEYTYPE_STRING) {
        if (RedisModule_ValueLength(key) == n) resize = 0;
        else if (RedisModule_DeleteKey(key) != REDISMODULE_OK) return 0;
    }
    if (resize && RedisModule_StringTruncate(key, n) != REDISMODULE_OK) return 0;
    size_t len;
    char *p = RedisModule_StringDMA(key, &len, REDISMODULE_WRITE);
    if (!p || len != n) return 0;
    memcpy(p, digits, n);
    if (RedisModule_SetAbsExpire(key, at) != REDISMODULE_OK) return 0;
    RedisModule_Replicate(ctx, "SET", "sbsl", name, digits, n, pxat, at);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_STRING, "set", name);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_GENERIC, "expire", name);
    RedisModule_SignalModifiedKey(ctx, name);
    return 1;
}

static void reply5(RedisModuleCtx *ctx, long long a, long long b, long long c, long long d,
                   long long e) {
    RedisModule_ReplyWithArray(ctx, 5);
    RedisModule_ReplyWithLongLong(ctx, a);
    RedisModule_ReplyWithLongLong(ctx, b);
    RedisModule_ReplyWithLongLong(ctx, c);
    RedisModule_ReplyWithLongLong(ctx, d);
    RedisModule_ReplyWithLongLong(ctx, e);
}

/* FLOOR.FIXED key limit window */
static int fixed(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 4) return RedisModule_WrongArity(ctx);
    long long limit, window;
    if (RedisModule_StringToLongLong(argv[2], &limit) != REDISMODULE_OK || limit < 1 ||
        !parse_ms(argv[3], &window))
        return RedisModule_ReplyWithError(ctx, "ERR bad argument");
    long long now = (long long)RedisModule_Milliseconds();
    long long end = (now / window + 1) * window;
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    int type = RedisModule_KeyType(key);
    unsigned long long used = 0;
    long long expires = 0;
    int found = load(key, type, &used, &expires);
    if (found < 0) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, "WRONGTYPE not a counter");
    }
    if (!found || expires != end) used = 0;
    if (used + 1 > (unsigned long long)limit) {
        RedisModule_CloseKey(key);
        reply5(ctx, 0, limit, 0, end - now, end - now);
        return REDISMODULE_OK;
    }
    used += 1;
    char digits[24];
    size_t n = format_u64(digits, used);
    int ok = store(ctx, argv[1], key, type, digits, n, end);
    RedisModule_CloseKey(key);
    if (!ok) return RedisModule_ReplyWithError(ctx, "ERR write failed");
    reply5(ctx, 1, limit, limit - (long long)used, 0, end - now);
    return REDISMODULE_OK;
}

/* FLOOR.GCRA key capacity tokens period */
static int gcra(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 5) return RedisModule_WrongArity(ctx);
    long long capacity, tokens, period;
    if (RedisModule_StringToLongLong(argv[2], &capacity) != REDISMODULE_OK || capacity < 1 ||
        RedisModule_StringToLongLong(argv[3], &tokens) != REDISMODULE_OK || tokens < 1 ||
        !parse_ms(argv[4], &period))
        return RedisModule_ReplyWithError(ctx, "ERR bad argument");
    unsigned __int128 t128 = (unsigned __int128)period * 1000000u / (unsigned long long)tokens;
    unsigned long long t = (unsigned long long)t128;
    unsigned __int128 d = (unsigned __int128)t * (unsigned long long)capacity;
    long long now_ms = (long long)RedisModule_Milliseconds();
    unsigned long long now = (unsigned long long)now_ms * 1000000u;
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    int type = RedisModule_KeyType(key);
    unsigned long long tat = 0;
    long long expires = 0;
    if (load(key, type, &tat, &expires) < 0) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, "WRONGTYPE not a TAT");
    }
    unsigned long long base = tat > now ? tat : now;
    unsigned long long debt = base - now + t;
    if ((unsigned __int128)debt > d) {
        RedisModule_CloseKey(key);
        reply5(ctx, 0, capacity, 0, (long long)((debt - d + 999999) / 1000000),
               (long long)((base - now + 999999) / 1000000));
        return REDISMODULE_OK;
    }
    tat = base + t;
    char digits[24];
    size_t n = format_u64(digits, tat);
    long long at = (long long)((tat + 999999) / 1000000);
    int ok = store(ctx, argv[1], key, type, digits, n, at);
    RedisModule_CloseKey(key);
    if (!ok) return RedisModule_ReplyWithError(ctx, "ERR write failed");
    long long remaining = (long long)((d - debt) / t);
    reply5(ctx, 1, capacity, remaining > capacity ? capacity : remaining, 0,
           (long long)((debt + 999999) / 1000000));
    return REDISMODULE_OK;
}

/* FLOOR.BUCKET key capacity tokens period: the level in millionths of a token. */
static int bucket(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 5) return RedisModule_WrongArity(ctx);
    long long capacity, tokens, period;
    if (RedisModule_StringToLongLong(argv[2], &capacity) != REDISMODULE_OK || capacity < 1 ||
        RedisModule_StringToLongLong(argv[3], &tokens) != REDISMODULE_OK || tokens < 1 ||
        !parse_ms(argv[4], &period))
        return RedisModule_ReplyWithError(ctx, "ERR bad argument");
    long long now = (long long)RedisModule_Milliseconds();
    unsigned __int128 cap = (unsigned __int128)capacity * 1000000u, level = cap;
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    int type = RedisModule_KeyType(key);
    if (type == REDISMODULE_KEYTYPE_HASH) {
        RedisModuleString *t = NULL, *ts = NULL;
        RedisModule_HashGet(key, REDISMODULE_HASH_NONE, f_tokens, &t, f_ts, &ts, NULL);
        unsigned long long micros = 0, at = 0;
        size_t len;
        const char *p;
        int ok = t && ts;
        if (ok) {
            p = RedisModule_StringPtrLen(t, &len);
            size_t i = 0;
            while (i < len && p[i] != '.') i++;
            ok = parse_u64(p, i, &micros);
            unsigned long long frac = 0, scale = 1000000u;
            for (size_t j = i + 1; j < len && scale > 1; j++) {
                scale /= 10;
                frac += (unsigned long long)(p[j] - '0') * scale;
            }
            micros = micros * 1000000u + frac;
            p = RedisModule_StringPtrLen(ts, &len);
            ok = ok && parse_u64(p, len, &at);
        }
        if (t) RedisModule_FreeString(NULL, t);
        if (ts) RedisModule_FreeString(NULL, ts);
        if (!ok) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, "ERR not a bucket");
        }
        unsigned __int128 elapsed = now > (long long)at ? (unsigned long long)(now - (long long)at) : 0;
        level = (unsigned __int128)micros +
                elapsed * (unsigned long long)tokens * 1000000u / (unsigned long long)period;
        if (level > cap) level = cap;
    } else if (type != REDISMODULE_KEYTYPE_EMPTY) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, "WRONGTYPE not a bucket");
    }
    if (level < 1000000u) {
        RedisModule_CloseKey(key);
        reply5(ctx, 0, capacity, 0, 1, 1);
        return REDISMODULE_OK;
    }
    level -= 1000000u;
    unsigned long long deficit = (unsigned long long)(cap - level);
    long long reset = (long long)(((unsigned __int128)deficit * (unsigned long long)period +
                                   (unsigned long long)tokens * 1000000u - 1) /
                                  ((unsigned long long)tokens * 1000000u));
    char digits[48];
    size_t n = format_u64(digits, (unsigned long long)(level / 1000000u));
    unsigned long long frac = (unsigned long long)(level % 1000000u);
    if (frac) {
        int places = 6;
        while (frac % 10 == 0) frac /= 10, places--;
        digits[n++] = '.';
        for (int i = places - 1; i >= 0; i--, frac /= 10) digits[n + (size_t)i] = (char)('0' + frac % 10);
        n += (size_t)places;
    }
    RedisModuleString *t = RedisModule_CreateString(NULL, digits, n);
    RedisModuleString *ts = RedisModule_CreateStringFromLongLong(NULL, now);
    int set = RedisModule_HashSet(key, REDISMODULE_HASH_COUNT_ALL, f_tokens, t, f_ts, ts, NULL);
    RedisModule_FreeString(NULL, t);
    RedisModule_FreeString(NULL, ts);
    if (set != 2 || RedisModule_SetAbsExpire(key, now + reset) != REDISMODULE_OK) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, "ERR write failed");
    }
    RedisModule_Replicate(ctx, "HSET", "ssbsl", argv[1], f_tokens, digits, n, f_ts, now);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hset", argv[1]);
    RedisModule_Replicate(ctx, "PEXPIREAT", "sl", argv[1], now + reset);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_GENERIC, "expire", argv[1]);
    RedisModule_SignalModifiedKey(ctx, argv[1]);
    RedisModule_CloseKey(key);
    reply5(ctx, 1, capacity, (long long)(level / 1000000u), 0, reset);
    return REDISMODULE_OK;
}

/* The score at one end of a sorted set (the lowest, or the highest when last), as
 * RL reads it: a range, its current element, stopped. 0 when there is none. */
static int edge(RedisModuleKey *key, int last, double *score) {
    int ok = last ? RedisModule_ZsetLastInScoreRange(key, REDISMODULE_NEGATIVE_INFINITE,
                                                      REDISMODULE_POSITIVE_INFINITE, 0, 0)
                  : RedisModule_ZsetFirstInScoreRange(key, REDISMODULE_NEGATIVE_INFINITE,
                                                       REDISMODULE_POSITIVE_INFINITE, 0, 0);
    RedisModuleString *member = NULL;
    if (ok == REDISMODULE_OK && !RedisModule_ZsetRangeEndReached(key))
        member = RedisModule_ZsetRangeCurrentElement(key, score);
    RedisModule_ZsetRangeStop(key);
    if (!member) return 0;
    RedisModule_FreeString(NULL, member);
    return 1;
}

/* A whole ms time in 0 ..= 2^53 - 1 (the check RL makes of both edges). */
static int whole_ms(double score) {
    return score >= 0 && score <= 9007199254740991.0 && score == (double)(long long)score;
}

/* FLOOR.ACQUIRE key limit ttl id: member = id, score = the lease's end in ms. */
static int acquire(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 5) return RedisModule_WrongArity(ctx);
    long long limit, ttl;
    if (RedisModule_StringToLongLong(argv[2], &limit) != REDISMODULE_OK || limit < 1 ||
        !parse_ms(argv[3], &ttl))
        return RedisModule_ReplyWithError(ctx, "ERR bad argument");
    long long now = (long long)RedisModule_Milliseconds();
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    int type = RedisModule_KeyType(key);
    long long stored = 0, ended = 0, held = 0;
    double score;
    if (type == REDISMODULE_KEYTYPE_ZSET) {
        double low, high;
        if (!edge(key, 0, &low) || !edge(key, 1, &high) || !whole_ms(low) || !whole_ms(high)) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, "ERR not a lease set");
        }
        stored = (long long)RedisModule_ValueLength(key);
        if (RedisModule_ZsetFirstInScoreRange(key, REDISMODULE_NEGATIVE_INFINITE, (double)now, 0,
                                              0) == REDISMODULE_OK)
            while (!RedisModule_ZsetRangeEndReached(key)) {
                ended++;
                if (!RedisModule_ZsetRangeNext(key)) break;
            }
        RedisModule_ZsetRangeStop(key);
        held = RedisModule_ZsetScore(key, argv[4], &score) == REDISMODULE_OK && score > now;
    } else if (type != REDISMODULE_KEYTYPE_EMPTY) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, "WRONGTYPE not a lease set");
    }
    long long live = stored - ended;
    /* The latest end among the other leases (the last, or the one before it when the
     * last is the caller's). */
    long long latest = 0;
    if (type == REDISMODULE_KEYTYPE_ZSET &&
        RedisModule_ZsetLastInScoreRange(key, REDISMODULE_NEGATIVE_INFINITE,
                                         REDISMODULE_POSITIVE_INFINITE, 0, 0) == REDISMODULE_OK) {
        RedisModuleString *member = NULL;
        if (!RedisModule_ZsetRangeEndReached(key))
            member = RedisModule_ZsetRangeCurrentElement(key, &score);
        if (member) {
            size_t a, b;
            const char *m = RedisModule_StringPtrLen(member, &a);
            const char *id = RedisModule_StringPtrLen(argv[4], &b);
            int mine = a == b && memcmp(m, id, a) == 0;
            RedisModule_FreeString(NULL, member);
            member = NULL;
            if (mine && RedisModule_ZsetRangePrev(key))
                member = RedisModule_ZsetRangeCurrentElement(key, &score);
            else if (!mine)
                latest = (long long)score;
            if (member) {
                latest = (long long)score;
                RedisModule_FreeString(NULL, member);
            }
        }
        RedisModule_ZsetRangeStop(key);
    }
    if (!held && live >= limit) {
        long long soonest = now + 1;
        if (RedisModule_ZsetFirstInScoreRange(key, (double)now, REDISMODULE_POSITIVE_INFINITE, 1,
                                              0) == REDISMODULE_OK &&
            !RedisModule_ZsetRangeEndReached(key)) {
            RedisModuleString *member = RedisModule_ZsetRangeCurrentElement(key, &score);
            if (member) {
                soonest = (long long)score;
                RedisModule_FreeString(NULL, member);
            }
        }
        RedisModule_ZsetRangeStop(key);
        RedisModule_CloseKey(key);
        long long retry = soonest - now < 1 ? 1 : soonest - now;
        reply5(ctx, 0, limit, 0, retry, latest > now ? latest - now : 0);
        return REDISMODULE_OK;
    }
    long long end = now + ttl;
    if (latest < end) latest = end;
    /* The ended leases, collected first (a write ends a range), then removed. */
    RedisModuleString **gone = NULL;
    size_t n = 0;
    if (ended) {
        gone = RedisModule_Alloc(sizeof(*gone) * (size_t)ended);
        if (RedisModule_ZsetFirstInScoreRange(key, REDISMODULE_NEGATIVE_INFINITE, (double)now, 0,
                                              0) == REDISMODULE_OK)
            while (n < (size_t)ended && !RedisModule_ZsetRangeEndReached(key)) {
                RedisModuleString *member = RedisModule_ZsetRangeCurrentElement(key, &score);
                if (member) gone[n++] = member;
                if (!RedisModule_ZsetRangeNext(key)) break;
            }
        RedisModule_ZsetRangeStop(key);
    }
    for (size_t i = 0; i < n; i++) {
        RedisModule_ZsetRem(key, gone[i], NULL);
        RedisModule_FreeString(NULL, gone[i]);
    }
    if (gone) RedisModule_Free(gone);
    int flags = 0;
    if (RedisModule_ZsetAdd(key, (double)end, argv[4], &flags) != REDISMODULE_OK ||
        RedisModule_SetAbsExpire(key, latest) != REDISMODULE_OK) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, "ERR write failed");
    }
    if (n) {
        RedisModule_Replicate(ctx, "ZREMRANGEBYSCORE", "scl", argv[1], "-inf", now);
        RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_ZSET, "zremrangebyscore", argv[1]);
    }
    RedisModule_Replicate(ctx, "ZADD", "sls", argv[1], end, argv[4]);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_ZSET, "zadd", argv[1]);
    RedisModule_Replicate(ctx, "PEXPIREAT", "sl", argv[1], latest);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_GENERIC, "expire", argv[1]);
    RedisModule_SignalModifiedKey(ctx, argv[1]);
    RedisModule_CloseKey(key);
    reply5(ctx, 1, limit, limit - (held ? live : live + 1), 0, latest - now);
    return REDISMODULE_OK;
}

/* Reads four decimals one space apart, each at most 2^53 - 1 (as RL does, which
 * also keeps the sums below from overflowing): 1 when exactly four. */
static int fields4(const char *p, size_t len, unsigned long long out[4]) {
    size_t start = 0;
    int n = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && p[i] != ' ') continue;
        if (n == 4 || !parse_u64(p + start, i - start, &out[n]) || out[n] > 9007199254740991ULL)
            return 0;
        n++;
        start = i + 1;
    }
    return n == 4;
}

/* FLOOR.PENALTY key strikes window block max: one strike a call. */
static int penalty(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 6) return RedisModule_WrongArity(ctx);
    long long strikes, window, block, max;
    if (RedisModule_StringToLongLong(argv[2], &strikes) != REDISMODULE_OK || strikes < 1 ||
        !parse_ms(argv[3], &window) || !parse_ms(argv[4], &block) || !parse_ms(argv[5], &max) ||
        block > max)
        return RedisModule_ReplyWithError(ctx, "ERR bad argument");
    long long now = (long long)RedisModule_Milliseconds();
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    int type = RedisModule_KeyType(key);
    /* count, window_end, level, blocked_until */
    unsigned long long s[4] = {0, 0, 0, 0};
    if (type == REDISMODULE_KEYTYPE_STRING) {
        size_t len;
        char *p = RedisModule_StringDMA(key, &len, REDISMODULE_READ);
        if (!p || !fields4(p, len, s)) type = -1;
    } else if (type != REDISMODULE_KEYTYPE_EMPTY) {
        type = -1;
    }
    if (type < 0) {
        RedisModule_CloseKey(key);
        return RedisModule_ReplyWithError(ctx, "WRONGTYPE not a penalty state");
    }
    long long count = (long long)s[0], window_end = (long long)s[1], level = (long long)s[2],
              blocked_until = (long long)s[3];
    /* The state as seen now: an ended window holds nothing, a quiet offender is forgiven. */
    if (now >= window_end) count = window_end = 0;
    if (level > 0 && now >= blocked_until + max) level = 0;
    int write = now >= blocked_until;
    if (write) {
        if (count + 1 >= strikes) {
            long long len = level < 24 ? block << level : max; /* block < 2^39 ms: no overflow */
            count = window_end = 0;
            level++;
            blocked_until = now + (len < max ? len : max);
        } else {
            if (count == 0) window_end = now + window;
            count++;
        }
    }
    long long resets = window_end > blocked_until ? window_end : blocked_until;
    if (level > 0 && blocked_until + max > resets) resets = blocked_until + max;
    if (write) {
        char digits[96];
        size_t n = format_u64(digits, (unsigned long long)count);
        digits[n++] = ' ';
        n += format_u64(digits + n, (unsigned long long)window_end);
        digits[n++] = ' ';
        n += format_u64(digits + n, (unsigned long long)level);
        digits[n++] = ' ';
        n += format_u64(digits + n, (unsigned long long)blocked_until);
        int ok = store(ctx, argv[1], key, type, digits, n, resets);
        if (!ok) {
            RedisModule_CloseKey(key);
            return RedisModule_ReplyWithError(ctx, "ERR write failed");
        }
    }
    RedisModule_CloseKey(key);
    int blocked = now < blocked_until;
    reply5(ctx, !blocked, strikes, blocked ? 0 : strikes - count, blocked ? blocked_until - now : 0,
           resets > now ? resets - now : 0);
    return REDISMODULE_OK;
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    if (RedisModule_Init(ctx, "floor", 1, REDISMODULE_APIVER_1) == REDISMODULE_ERR)
        return REDISMODULE_ERR;
    /* As RL: closing a key opened for writing signals nothing by itself. */
    RedisModule_SetModuleOptions(ctx, REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED);
    pxat = RedisModule_CreateString(NULL, "PXAT", 4);
    f_tokens = RedisModule_CreateString(NULL, "tokens", 6);
    f_ts = RedisModule_CreateString(NULL, "ts", 2);
    if (RedisModule_CreateCommand(ctx, "FLOOR.FIXED", fixed, "write deny-oom fast", 1, 1, 1) ==
            REDISMODULE_ERR ||
        RedisModule_CreateCommand(ctx, "FLOOR.GCRA", gcra, "write deny-oom fast", 1, 1, 1) ==
            REDISMODULE_ERR ||
        RedisModule_CreateCommand(ctx, "FLOOR.BUCKET", bucket, "write deny-oom fast", 1, 1, 1) ==
            REDISMODULE_ERR ||
        RedisModule_CreateCommand(ctx, "FLOOR.ACQUIRE", acquire, "write deny-oom", 1, 1, 1) ==
            REDISMODULE_ERR ||
        RedisModule_CreateCommand(ctx, "FLOOR.PENALTY", penalty, "write deny-oom fast", 1, 1, 1) ==
            REDISMODULE_ERR)
        return REDISMODULE_ERR;
    return REDISMODULE_OK;
}
