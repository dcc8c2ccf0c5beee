/* What a level/target preset adds, in words for the front ends (issue
 * 10: a preset that adds nothing must not look like it ran something
 * more). The same rule as ox_pm_new: a pass is on when its level is at most
 * the preset's and its target is allowed. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onnxscope/passes.h"

static bool preset_on(const ox_pass *p, ox_pass_level level, ox_pass_target target)
{
    return p->level <= level && (p->target == OX_TARGET_ONNX || target == OX_TARGET_ORT);
}

int ox_pass_level_adds(ox_pass_level level, ox_pass_target target, const ox_pass **out, int max)
{
    int k = 0;
    for (int i = 0; i < ox_pass_count() && level > OX_LEVEL_BASIC; i++) {
        const ox_pass *p = ox_pass_at(i);
        if (preset_on(p, level, target) && !preset_on(p, level - 1, target)) {
            if (out && k < max)
                out[k] = p;
            k++;
        }
    }
    return k;
}

int ox_pass_target_adds(ox_pass_level level, ox_pass_target target, const ox_pass **out, int max)
{
    int k = 0;
    for (int i = 0; i < ox_pass_count() && target == OX_TARGET_ORT; i++) {
        const ox_pass *p = ox_pass_at(i);
        if (preset_on(p, level, target) && !preset_on(p, level, OX_TARGET_ONNX)) {
            if (out && k < max)
                out[k] = p;
            k++;
        }
    }
    return k;
}

/* Appends "a, b, c" (the first few names, then "..."). */
static void name_list(char *buf, size_t len, const ox_pass **v, int n)
{
    size_t pos = strlen(buf);
    for (int i = 0; i < n && i < 4 && pos < len; i++) {
        int w = snprintf(buf + pos, len - pos, "%s%s", i ? ", " : "", v[i]->name);
        pos += w > 0 ? (size_t)w : 0;
    }
    if (n > 4 && pos < len)
        snprintf(buf + pos, len - pos, ", ...");
}

/* Appends "; " and a formatted phrase to buf. */
static void phrase(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void phrase(char *buf, size_t len, const char *fmt, ...)
{
    size_t pos = strlen(buf);
    if (pos && pos + 2 < len) {
        memcpy(buf + pos, "; ", 3);
        pos += 2;
    }
    if (pos + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + pos, len - pos, fmt, ap);
    va_end(ap);
}

static void adds_phrase(char *buf, size_t len, const char *who, const ox_pass **v, int n)
{
    phrase(buf, len, "%s adds %d pass%s (", who, n, n == 1 ? "" : "es");
    name_list(buf, len, v, n < 64 ? n : 64);
    size_t pos = strlen(buf);
    if (pos + 1 < len)
        snprintf(buf + pos, len - pos, ")");
}

void ox_pass_preset_note(ox_pass_level level, ox_pass_target target, char *adds, size_t alen,
                         char *none, size_t nlen)
{
    const ox_pass *lv[64], *tv[64];
    if (adds && alen)
        adds[0] = 0;
    if (none && nlen)
        none[0] = 0;
    if (!adds || !alen || !none || !nlen)
        return;
    int nl = level > OX_LEVEL_BASIC ? ox_pass_level_adds(level, target, lv, 64) : -1;
    int nt = target == OX_TARGET_ORT ? ox_pass_target_adds(level, target, tv, 64) : -1;
    char who[64];
    if (nl > 0 && nl == nt && !memcmp(lv, tv, (size_t)(nl < 64 ? nl : 64) * sizeof *lv)) {
        /* --level all --target ort: both name the same passes. */
        snprintf(who, sizeof who, "--level %s with --target ort", ox_pass_level_name(level));
        adds_phrase(adds, alen, who, lv, nl);
        return;
    }
    if (nl > 0) {
        snprintf(who, sizeof who, "--level %s", ox_pass_level_name(level));
        adds_phrase(adds, alen, who, lv, nl);
    } else if (nl == 0) {
        phrase(none, nlen, "--level %s adds no passes under --target %s%s",
               ox_pass_level_name(level), ox_pass_target_name(target),
               target == OX_TARGET_ONNX && ox_pass_target_adds(level, OX_TARGET_ORT, NULL, 0)
                   ? " (its passes emit com.microsoft ops: add --target ort)" : "");
    }
    if (nt > 0)
        adds_phrase(adds, alen, "--target ort", tv, nt);
    else if (nt == 0)
        phrase(none, nlen, "--target ort adds no passes at --level %s (the com.microsoft "
               "fusions run at --level all)", ox_pass_level_name(level));
}
