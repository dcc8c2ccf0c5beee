/* Operator categories and the theme file parser shared by the TUI and the
 * graph export. A theme is a list of `key = value` lines; every value is a
 * style "FG [on BG] [bold|dim|underline|reverse|italic ...]". */
#include "onnxscope/theme.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export_config.h"
#include "onnxscope/io.h"

/* ---- operator categories ------------------------------------------------ */

typedef struct {
    const char *op;
    ox_opcat cat;
} opcat_entry;

/* Standard ONNX ops plus the common com.microsoft contrib ops. Linear search
 * is fine: most comparisons fail on the first character. */
static const opcat_entry opcat_table[] = {
    /* conv */
    {"Conv", OX_OPCAT_CONV}, {"ConvTranspose", OX_OPCAT_CONV},
    {"DeformConv", OX_OPCAT_CONV}, {"FusedConv", OX_OPCAT_CONV},
    {"NhwcConv", OX_OPCAT_CONV}, {"Col2Im", OX_OPCAT_CONV},
    /* matmul / gemm */
    {"MatMul", OX_OPCAT_MATMUL}, {"Gemm", OX_OPCAT_MATMUL},
    {"FusedMatMul", OX_OPCAT_MATMUL}, {"FusedGemm", OX_OPCAT_MATMUL},
    {"Einsum", OX_OPCAT_MATMUL}, {"Attention", OX_OPCAT_MATMUL},
    {"MultiHeadAttention", OX_OPCAT_MATMUL}, {"GroupQueryAttention", OX_OPCAT_MATMUL},
    /* activation */
    {"Relu", OX_OPCAT_ACTIVATION}, {"LeakyRelu", OX_OPCAT_ACTIVATION},
    {"PRelu", OX_OPCAT_ACTIVATION}, {"Sigmoid", OX_OPCAT_ACTIVATION},
    {"HardSigmoid", OX_OPCAT_ACTIVATION}, {"Tanh", OX_OPCAT_ACTIVATION},
    {"Elu", OX_OPCAT_ACTIVATION}, {"Selu", OX_OPCAT_ACTIVATION},
    {"Celu", OX_OPCAT_ACTIVATION}, {"Softplus", OX_OPCAT_ACTIVATION},
    {"Softsign", OX_OPCAT_ACTIVATION}, {"Gelu", OX_OPCAT_ACTIVATION},
    {"FastGelu", OX_OPCAT_ACTIVATION}, {"BiasGelu", OX_OPCAT_ACTIVATION},
    {"QuickGelu", OX_OPCAT_ACTIVATION}, {"HardSwish", OX_OPCAT_ACTIVATION},
    {"Mish", OX_OPCAT_ACTIVATION}, {"ThresholdedRelu", OX_OPCAT_ACTIVATION},
    {"Softmax", OX_OPCAT_ACTIVATION}, {"LogSoftmax", OX_OPCAT_ACTIVATION},
    {"Hardmax", OX_OPCAT_ACTIVATION}, {"Clip", OX_OPCAT_ACTIVATION},
    {"Shrink", OX_OPCAT_ACTIVATION}, {"Swish", OX_OPCAT_ACTIVATION},
    /* normalization */
    {"BatchNormalization", OX_OPCAT_NORM}, {"InstanceNormalization", OX_OPCAT_NORM},
    {"LayerNormalization", OX_OPCAT_NORM}, {"GroupNormalization", OX_OPCAT_NORM},
    {"LpNormalization", OX_OPCAT_NORM}, {"MeanVarianceNormalization", OX_OPCAT_NORM},
    {"LRN", OX_OPCAT_NORM}, {"RMSNormalization", OX_OPCAT_NORM},
    {"SkipLayerNormalization", OX_OPCAT_NORM},
    {"SimplifiedLayerNormalization", OX_OPCAT_NORM},
    {"SkipSimplifiedLayerNormalization", OX_OPCAT_NORM},
    {"EmbedLayerNormalization", OX_OPCAT_NORM},
    /* pooling */
    {"MaxPool", OX_OPCAT_POOL}, {"AveragePool", OX_OPCAT_POOL},
    {"GlobalAveragePool", OX_OPCAT_POOL}, {"GlobalMaxPool", OX_OPCAT_POOL},
    {"LpPool", OX_OPCAT_POOL}, {"GlobalLpPool", OX_OPCAT_POOL},
    {"MaxRoiPool", OX_OPCAT_POOL}, {"RoiAlign", OX_OPCAT_POOL},
    {"MaxUnpool", OX_OPCAT_POOL},
    /* elementwise */
    {"Add", OX_OPCAT_ELEMENTWISE}, {"Sub", OX_OPCAT_ELEMENTWISE},
    {"Mul", OX_OPCAT_ELEMENTWISE}, {"Div", OX_OPCAT_ELEMENTWISE},
    {"Pow", OX_OPCAT_ELEMENTWISE}, {"Sqrt", OX_OPCAT_ELEMENTWISE},
    {"Exp", OX_OPCAT_ELEMENTWISE}, {"Log", OX_OPCAT_ELEMENTWISE},
    {"Abs", OX_OPCAT_ELEMENTWISE}, {"Neg", OX_OPCAT_ELEMENTWISE},
    {"Reciprocal", OX_OPCAT_ELEMENTWISE}, {"Floor", OX_OPCAT_ELEMENTWISE},
    {"Ceil", OX_OPCAT_ELEMENTWISE}, {"Round", OX_OPCAT_ELEMENTWISE},
    {"Sign", OX_OPCAT_ELEMENTWISE}, {"Sin", OX_OPCAT_ELEMENTWISE},
    {"Cos", OX_OPCAT_ELEMENTWISE}, {"Tan", OX_OPCAT_ELEMENTWISE},
    {"Asin", OX_OPCAT_ELEMENTWISE}, {"Acos", OX_OPCAT_ELEMENTWISE},
    {"Atan", OX_OPCAT_ELEMENTWISE}, {"Sinh", OX_OPCAT_ELEMENTWISE},
    {"Cosh", OX_OPCAT_ELEMENTWISE}, {"Asinh", OX_OPCAT_ELEMENTWISE},
    {"Acosh", OX_OPCAT_ELEMENTWISE}, {"Atanh", OX_OPCAT_ELEMENTWISE},
    {"Erf", OX_OPCAT_ELEMENTWISE}, {"Max", OX_OPCAT_ELEMENTWISE},
    {"Min", OX_OPCAT_ELEMENTWISE}, {"Mean", OX_OPCAT_ELEMENTWISE},
    {"Sum", OX_OPCAT_ELEMENTWISE}, {"Mod", OX_OPCAT_ELEMENTWISE},
    {"And", OX_OPCAT_ELEMENTWISE}, {"Or", OX_OPCAT_ELEMENTWISE},
    {"Xor", OX_OPCAT_ELEMENTWISE}, {"Not", OX_OPCAT_ELEMENTWISE},
    {"Equal", OX_OPCAT_ELEMENTWISE}, {"Less", OX_OPCAT_ELEMENTWISE},
    {"Greater", OX_OPCAT_ELEMENTWISE}, {"LessOrEqual", OX_OPCAT_ELEMENTWISE},
    {"GreaterOrEqual", OX_OPCAT_ELEMENTWISE}, {"Where", OX_OPCAT_ELEMENTWISE},
    {"BitShift", OX_OPCAT_ELEMENTWISE}, {"BitwiseAnd", OX_OPCAT_ELEMENTWISE},
    {"BitwiseOr", OX_OPCAT_ELEMENTWISE}, {"BitwiseXor", OX_OPCAT_ELEMENTWISE},
    {"BitwiseNot", OX_OPCAT_ELEMENTWISE}, {"IsNaN", OX_OPCAT_ELEMENTWISE},
    {"IsInf", OX_OPCAT_ELEMENTWISE}, {"BiasAdd", OX_OPCAT_ELEMENTWISE},
    {"Cast", OX_OPCAT_ELEMENTWISE}, {"CastLike", OX_OPCAT_ELEMENTWISE},
    /* reshape / shape / data movement */
    {"Reshape", OX_OPCAT_RESHAPE}, {"Flatten", OX_OPCAT_RESHAPE},
    {"Squeeze", OX_OPCAT_RESHAPE}, {"Unsqueeze", OX_OPCAT_RESHAPE},
    {"Transpose", OX_OPCAT_RESHAPE}, {"Concat", OX_OPCAT_RESHAPE},
    {"Split", OX_OPCAT_RESHAPE}, {"Slice", OX_OPCAT_RESHAPE},
    {"Gather", OX_OPCAT_RESHAPE}, {"GatherElements", OX_OPCAT_RESHAPE},
    {"GatherND", OX_OPCAT_RESHAPE}, {"Scatter", OX_OPCAT_RESHAPE},
    {"ScatterElements", OX_OPCAT_RESHAPE}, {"ScatterND", OX_OPCAT_RESHAPE},
    {"Shape", OX_OPCAT_RESHAPE}, {"Size", OX_OPCAT_RESHAPE},
    {"Expand", OX_OPCAT_RESHAPE}, {"Tile", OX_OPCAT_RESHAPE},
    {"Pad", OX_OPCAT_RESHAPE}, {"Identity", OX_OPCAT_RESHAPE},
    {"DepthToSpace", OX_OPCAT_RESHAPE}, {"SpaceToDepth", OX_OPCAT_RESHAPE},
    {"Resize", OX_OPCAT_RESHAPE}, {"Upsample", OX_OPCAT_RESHAPE},
    {"Compress", OX_OPCAT_RESHAPE}, {"Trilu", OX_OPCAT_RESHAPE},
    {"ReverseSequence", OX_OPCAT_RESHAPE}, {"CenterCropPad", OX_OPCAT_RESHAPE},
    {"NonZero", OX_OPCAT_RESHAPE}, {"ConstantOfShape", OX_OPCAT_RESHAPE},
    {"Range", OX_OPCAT_RESHAPE}, {"OneHot", OX_OPCAT_RESHAPE},
    {"EyeLike", OX_OPCAT_RESHAPE},
    /* reduction */
    {"ReduceSum", OX_OPCAT_REDUCTION}, {"ReduceMean", OX_OPCAT_REDUCTION},
    {"ReduceMax", OX_OPCAT_REDUCTION}, {"ReduceMin", OX_OPCAT_REDUCTION},
    {"ReduceProd", OX_OPCAT_REDUCTION}, {"ReduceL1", OX_OPCAT_REDUCTION},
    {"ReduceL2", OX_OPCAT_REDUCTION}, {"ReduceLogSum", OX_OPCAT_REDUCTION},
    {"ReduceLogSumExp", OX_OPCAT_REDUCTION}, {"ReduceSumSquare", OX_OPCAT_REDUCTION},
    {"ArgMax", OX_OPCAT_REDUCTION}, {"ArgMin", OX_OPCAT_REDUCTION},
    {"TopK", OX_OPCAT_REDUCTION}, {"CumSum", OX_OPCAT_REDUCTION},
    /* control flow */
    {"If", OX_OPCAT_CONTROL}, {"Loop", OX_OPCAT_CONTROL},
    {"Scan", OX_OPCAT_CONTROL}, {"SequenceMap", OX_OPCAT_CONTROL},
    /* quantization */
    {"QuantizeLinear", OX_OPCAT_QUANT}, {"DequantizeLinear", OX_OPCAT_QUANT},
    {"DynamicQuantizeLinear", OX_OPCAT_QUANT}, {"MatMulInteger", OX_OPCAT_QUANT},
    {"ConvInteger", OX_OPCAT_QUANT}, {"DynamicQuantizeMatMul", OX_OPCAT_QUANT},
    {"MatMulIntegerToFloat", OX_OPCAT_QUANT}, {"MatMulNBits", OX_OPCAT_QUANT},
    {"QAttention", OX_OPCAT_QUANT}, {"QGemm", OX_OPCAT_QUANT},
};

ox_opcat ox_op_category(const char *op_type)
{
    if (!op_type)
        return OX_OPCAT_OTHER;
    for (size_t i = 0; i < sizeof opcat_table / sizeof opcat_table[0]; i++)
        if (strcmp(op_type, opcat_table[i].op) == 0)
            return opcat_table[i].cat;
    /* Families named by prefix: QLinearConv, QLinearAdd, ... */
    if (strncmp(op_type, "QLinear", 7) == 0)
        return OX_OPCAT_QUANT;
    return OX_OPCAT_OTHER;
}

const char *ox_opcat_name(ox_opcat c)
{
    static const char *const names[] = {
#define X(id, name) name,
        OX_OPCAT_MAP(X)
#undef X
    };
    if ((int)c < 0 || c >= OX_OPCAT_COUNT)
        return "other";
    return names[c];
}

/* ---- colours --------------------------------------------------------------- */

/* xterm's default values for the 16 basic colours. */
static const uint32_t basic16[16] = {
    0x000000, 0xcd0000, 0x00cd00, 0xcdcd00, 0x0000ee, 0xcd00cd, 0x00cdcd, 0xe5e5e5,
    0x7f7f7f, 0xff0000, 0x00ff00, 0xffff00, 0x5c5cff, 0xff00ff, 0x00ffff, 0xffffff,
};
static const char *const basic_names[8] = {
    "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
};

static uint32_t xterm256_rgb(int i)
{
    if (i < 16)
        return basic16[i];
    if (i < 232) {
        static const int lv[6] = {0, 95, 135, 175, 215, 255};
        int r = (i - 16) / 36, g = (i - 16) / 6 % 6, b = (i - 16) % 6;
        return (uint32_t)(lv[r] << 16 | lv[g] << 8 | lv[b]);
    }
    int v = 8 + 10 * (i - 232);
    return (uint32_t)(v << 16 | v << 8 | v);
}

static long rgb_dist(uint32_t a, uint32_t b)
{
    long dr = (long)(a >> 16 & 255) - (long)(b >> 16 & 255);
    long dg = (long)(a >> 8 & 255) - (long)(b >> 8 & 255);
    long db = (long)(a & 255) - (long)(b & 255);
    /* Weighted like perceived brightness so greys do not turn blue. */
    return 3 * dr * dr + 4 * dg * dg + 2 * db * db;
}

/* Nearest xterm-256 colour, skipping 0-15 whose real values vary by terminal. */
static int nearest256(uint32_t rgb)
{
    int best = 16;
    long bd = -1;
    for (int i = 16; i < 256; i++) {
        long d = rgb_dist(rgb, xterm256_rgb(i));
        if (bd < 0 || d < bd) {
            bd = d;
            best = i;
        }
    }
    return best;
}

/* Nearest of the 8 basic colours by hue rather than distance: on an
 * 8-colour terminal a pastel blue should stay blue, not become white. */
static int nearest8(uint32_t rgb)
{
    int r = rgb >> 16 & 255, g = rgb >> 8 & 255, b = rgb & 255;
    int mx = r > g ? (r > b ? r : b) : (g > b ? g : b);
    int mn = r < g ? (r < b ? r : b) : (g < b ? g : b);
    if (mx - mn < 40)   /* grey: by brightness */
        return mx < 128 ? 0 : 7;
    /* Channels well above the minimum are "on". */
    int thr = mn + (mx - mn) / 2;
    int bits = (r > thr ? 1 : 0) | (g > thr ? 2 : 0) | (b > thr ? 4 : 0);
    return bits == 0 ? 0 : bits; /* curses order: 1 red, 2 green, 4 blue */
}

static void color_from_rgb(ox_color *c, uint32_t rgb)
{
    c->has_rgb = true;
    c->rgb = rgb & 0xffffff;
    c->c256 = nearest256(c->rgb);
    c->c8 = nearest8(c->rgb);
}

static void color_from_index(ox_color *c, int idx)
{
    c->has_rgb = true;
    c->rgb = xterm256_rgb(idx);
    c->c256 = idx;
    c->c8 = idx < 8 ? idx : idx < 16 ? idx - 8 : nearest8(c->rgb);
}

static bool parse_hex(const char *s, uint32_t *rgb)
{
    if (s[0] != '#')
        return false;
    size_t n = strlen(s + 1);
    if (n != 3 && n != 6)
        return false;
    uint32_t v = 0;
    for (size_t i = 1; i <= n; i++) {
        int ch = (unsigned char)s[i];
        if (!isxdigit(ch))
            return false;
        int d = isdigit(ch) ? ch - '0' : (tolower(ch) - 'a' + 10);
        v = v << 4 | (uint32_t)d;
        if (n == 3)
            v = v << 4 | (uint32_t)d;
    }
    *rgb = v;
    return true;
}

/* A terminal colour: name, bright-name, grey, default, or 0..255. Returns the
 * index, -1 for default, -2 when not a terminal colour. */
static int parse_term(const char *s)
{
    if (strcmp(s, "default") == 0)
        return -1;
    if (strcmp(s, "grey") == 0 || strcmp(s, "gray") == 0)
        return 8;
    int base = 0;
    if (strncmp(s, "bright-", 7) == 0) {
        base = 8;
        s += 7;
    }
    for (int i = 0; i < 8; i++)
        if (strcmp(s, basic_names[i]) == 0)
            return base + i;
    if (base)
        return -2;
    if (!*s || strlen(s) > 3)
        return -2;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return -2;
    int v = atoi(s);
    return v <= 255 ? v : -2;
}

bool ox_color_parse(const char *s, ox_color *out)
{
    if (!s || !out)
        return false;
    char buf[64];
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n + 1);
    char *slash = strchr(buf, '/');
    if (slash) {
        /* "#hex/term": both given explicitly. */
        *slash = '\0';
        uint32_t rgb;
        int t = parse_term(slash + 1);
        if (!parse_hex(buf, &rgb) || t == -2)
            return false;
        color_from_rgb(out, rgb);
        out->c256 = t;
        out->c8 = t < 0 ? -1 : t < 8 ? t : t < 16 ? t - 8 : nearest8(xterm256_rgb(t));
        return true;
    }
    uint32_t rgb;
    if (parse_hex(buf, &rgb)) {
        color_from_rgb(out, rgb);
        return true;
    }
    int t = parse_term(buf);
    if (t == -2)
        return false;
    if (t == -1) {
        out->has_rgb = false;
        out->rgb = 0;
        out->c256 = -1;
        out->c8 = -1;
        return true;
    }
    color_from_index(out, t);
    return true;
}

const char *ox_color_hex(const ox_color *c, char *buf, size_t len)
{
    if (!c || !c->has_rgb || !buf || len < 8)
        return NULL;
    snprintf(buf, len, "#%06x", (unsigned)(c->rgb & 0xffffff));
    return buf;
}

/* ---- slots --------------------------------------------------------------- */

static const char *const slot_keys[] = {
#define X(id, key) key,
    OX_THEME_SLOT_MAP(X)
#undef X
};

const char *ox_theme_slot_key(ox_theme_slot s)
{
    if ((int)s < 0 || s >= OX_SLOT_COUNT)
        return "?";
    return slot_keys[s];
}

int ox_theme_slot_from_key(const char *key)
{
    if (!key)
        return -1;
    for (int i = 0; i < OX_SLOT_COUNT; i++)
        if (strcmp(key, slot_keys[i]) == 0)
            return i;
    return -1;
}

ox_theme_slot ox_theme_opcat_slot(ox_opcat c)
{
    if ((int)c < 0 || c >= OX_OPCAT_COUNT)
        c = OX_OPCAT_OTHER;
    return (ox_theme_slot)(OX_SLOT_OP_CONV + (int)c);
}

const ox_style *ox_theme_op_style(const ox_theme *t, const char *op_type)
{
    return &t->slot[ox_theme_opcat_slot(ox_op_category(op_type))];
}

/* ---- parsing ---------------------------------------------------------------- */

static const struct {
    const char *name;
    unsigned bit;
} style_attrs[] = {
    {"bold", OX_STYLE_BOLD}, {"dim", OX_STYLE_DIM},
    {"underline", OX_STYLE_UNDERLINE}, {"reverse", OX_STYLE_REVERSE},
    {"italic", OX_STYLE_ITALIC},
};

/* Parses "FG [on BG] [attr ...]" (BG defaults to "default"). Writes a
 * problem description into why on failure. */
static bool parse_style(char *v, ox_style *st, char *why, size_t whylen)
{
    ox_style s;
    memset(&s, 0, sizeof s);
    ox_color_parse("default", &s.fg);
    ox_color_parse("default", &s.bg);
    int ntok = 0;
    bool want_bg = false, have_bg = false;
    for (char *save = NULL, *tok = strtok_r(v, " \t,", &save); tok;
         tok = strtok_r(NULL, " \t,", &save)) {
        ntok++;
        if (want_bg) {
            if (!ox_color_parse(tok, &s.bg)) {
                snprintf(why, whylen, "unknown background colour '%s'", tok);
                return false;
            }
            want_bg = false;
            have_bg = true;
            continue;
        }
        if (ntok == 1) {
            if (!ox_color_parse(tok, &s.fg)) {
                snprintf(why, whylen,
                         "unknown colour '%s' (use #rrggbb, a colour name, 0-255 "
                         "or default)", tok);
                return false;
            }
            continue;
        }
        if (strcmp(tok, "on") == 0) {
            if (have_bg) {
                snprintf(why, whylen, "'on' given twice");
                return false;
            }
            want_bg = true;
            continue;
        }
        bool found = false;
        for (size_t i = 0; i < sizeof style_attrs / sizeof style_attrs[0]; i++)
            if (strcmp(tok, style_attrs[i].name) == 0) {
                s.attrs |= style_attrs[i].bit;
                found = true;
            }
        if (!found) {
            snprintf(why, whylen,
                     "unknown attribute '%s' (bold, dim, underline, reverse, italic)",
                     tok);
            return false;
        }
    }
    if (ntok == 0) {
        snprintf(why, whylen, "empty value");
        return false;
    }
    if (want_bg) {
        snprintf(why, whylen, "'on' without a background colour");
        return false;
    }
    *st = s;
    return true;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

ox_status ox_theme_parse(const char *text, size_t len, const char *origin,
                         ox_theme *t, ox_error *err)
{
    if (!t)
        return ox_errorf(err, OX_EINVAL, "no theme to fill");
    ox_theme_default(t);
    if (!origin)
        origin = "<theme>";
    if (!text)
        return ox_errorf(err, OX_EINVAL, "%s: no text", origin);
    ox_theme th;
    ox_theme_default(&th);
    th.name[0] = '\0';
    size_t pos = 0;
    int lineno = 0;
    char line[1024];
    /* Editors on some systems start files with a UTF-8 byte-order mark. */
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        pos = 3;
    while (pos < len) {
        size_t e = pos;
        while (e < len && text[e] != '\n')
            e++;
        lineno++;
        size_t n = e - pos;
        if (n >= sizeof line)
            return ox_errorf(err, OX_EPARSE, "%s:%d: line too long", origin, lineno);
        memcpy(line, text + pos, n);
        line[n] = '\0';
        pos = e + 1;
        if (memchr(line, '\0', n))
            return ox_errorf(err, OX_EPARSE, "%s:%d: NUL byte in theme file",
                             origin, lineno);
        /* A comment is a '#' that starts the line or is followed by a blank
         * or the line end ("  # note"), so "#rrggbb" values survive. */
        char *first = line;
        while (isspace((unsigned char)*first))
            first++;
        for (char *p = line; *p; p++)
            if (*p == '#' && (p == first || (isspace((unsigned char)p[-1]) &&
                                             (!p[1] || isspace((unsigned char)p[1]))))) {
                *p = '\0';
                break;
            }
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            return ox_errorf(err, OX_EPARSE, "%s:%d: expected 'key = value', got '%s'",
                             origin, lineno, s);
        *eq = '\0';
        char *key = trim(s), *val = trim(eq + 1);
        if (!*key)
            return ox_errorf(err, OX_EPARSE, "%s:%d: missing key before '='", origin,
                             lineno);
        if (strcmp(key, "name") == 0) {
            snprintf(th.name, sizeof th.name, "%s", val);
            continue;
        }
        int slot = ox_theme_slot_from_key(key);
        if (slot < 0)
            return ox_errorf(err, OX_EPARSE,
                             "%s:%d: unknown key '%s' (see docs/EXPORT.md for the "
                             "list of ui.*, graph.* and op.* keys)",
                             origin, lineno, key);
        char why[200];
        if (!parse_style(val, &th.slot[slot], why, sizeof why))
            return ox_errorf(err, OX_EPARSE, "%s:%d: %s: %s", origin, lineno, key, why);
    }
    if (!th.name[0]) {
        /* Name a theme after its file: "themes/light.theme" -> "light". */
        const char *b = strrchr(origin, '/');
        b = b ? b + 1 : origin;
        snprintf(th.name, sizeof th.name, "%s", b);
        char *dot = strstr(th.name, ".theme");
        if (dot)
            *dot = '\0';
    }
    *t = th;
    return OX_OK;
}

ox_status ox_theme_load_file(const char *path, ox_theme *t, ox_error *err)
{
    if (!t)
        return ox_errorf(err, OX_EINVAL, "no theme to fill");
    ox_theme_default(t);
    if (!path)
        return ox_errorf(err, OX_EINVAL, "no theme path");
    ox_error oe = {0};
    int fd = ox_open_regular(path, &oe);   /* a FIFO would block */
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return ox_errorf(err, OX_EIO, "%s: %s", path, fd < 0 ? oe.msg : strerror(errno));
    }
    /* Theme files are tiny; refuse anything large rather than read a
     * mistakenly named model into memory. */
    char *buf = malloc(65537);
    if (!buf) {
        fclose(f);
        return ox_errorf(err, OX_ENOMEM, "out of memory reading %s", path);
    }
    size_t n = fread(buf, 1, 65537, f);
    bool bad = ferror(f);
    fclose(f);
    ox_status st;
    if (bad)
        st = ox_errorf(err, OX_EIO, "%s: read error", path);
    else if (n > 65536)
        st = ox_errorf(err, OX_EPARSE, "%s: too large for a theme file", path);
    else
        st = ox_theme_parse(buf, n, path, t, err);
    free(buf);
    return st;
}

static bool file_exists(const char *p)
{
    return access(p, R_OK) == 0;
}

ox_status ox_theme_load(const char *name, ox_theme *t, ox_error *err)
{
    if (!t)
        return ox_errorf(err, OX_EINVAL, "no theme to fill");
    ox_theme_default(t);
    if (!name || !*name || strcmp(name, "default") == 0)
        return OX_OK;
    size_t nl = strlen(name);
    if (strchr(name, '/') || (nl > 6 && strcmp(name + nl - 6, ".theme") == 0))
        return ox_theme_load_file(name, t, err);
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
            return ox_errorf(err, OX_EINVAL, "bad theme name '%s'", name);
    const char *dirs[4];
    int nd = 0;
    const char *env = getenv("ONNXSCOPE_THEMES");
    if (env && *env)
        dirs[nd++] = env;
    dirs[nd++] = "themes";
    dirs[nd++] = OX_SOURCE_THEMES_DIR;
    dirs[nd++] = OX_INSTALL_THEMES_DIR;
    char path[4096];
    for (int i = 0; i < nd; i++) {
        snprintf(path, sizeof path, "%s/%s.theme", dirs[i], name);
        if (file_exists(path))
            return ox_theme_load_file(path, t, err);
    }
    return ox_errorf(err, OX_EIO,
                     "theme '%s' not found (looked in $ONNXSCOPE_THEMES, ./themes, %s, "
                     "%s)", name, OX_SOURCE_THEMES_DIR, OX_INSTALL_THEMES_DIR);
}

/* ---- the built-in default --------------------------------------------------- */

/* Kept in step with themes/default.theme (a unit test compares them). */
static const char default_theme_text[] =
    "name = default\n"
    "ui.normal = default\n"
    "ui.title = white on blue bold\n"
    "ui.status = black on cyan\n"
    "ui.border = blue\n"
    "ui.header = yellow bold\n"
    "ui.selected = black on cyan\n"
    "ui.dim = bright-black\n"
    "ui.match = black on yellow\n"
    "ui.error = red bold\n"
    "ui.warning = yellow\n"
    "ui.ok = green\n"
    "ui.added = green bold\n"
    "ui.removed = red dim\n"
    "ui.changed = yellow\n"
    "ui.help = cyan\n"
    "graph.background = #ffffff\n"
    "graph.text = #000000\n"
    "graph.edge = #555555\n"
    "graph.border = #333333\n"
    "graph.input = #c6e2b3/green\n"
    "graph.output = #f8cfa0/yellow\n"
    "graph.initializer = #eeeeee/white\n"
    "graph.cluster = #f4f4f4/white\n"
    "graph.added = #2ca02c/green\n"
    "graph.removed = #b0b0b0/bright-black\n"
    "graph.changed = #ff7f0e/yellow\n"
    "op.conv = #aec7e8/blue\n"
    "op.matmul = #c5b0d5/magenta\n"
    "op.activation = #ffdd99/yellow\n"
    "op.normalization = #98df8a/green\n"
    "op.pooling = #9edae5/cyan\n"
    "op.elementwise = #e8e8e8/white\n"
    "op.reshape = #f7b6d2/magenta\n"
    "op.reduction = #dbdb8d/yellow\n"
    "op.control = #ff9896/red\n"
    "op.quant = #c49c94/red\n"
    "op.other = #ffffff/default\n";

void ox_theme_default(ox_theme *t)
{
    if (!t)
        return;
    /* Parsed from the built-in text on each call: a few dozen lines, and a
     * single source of truth for the defaults (no static cache, no races). */
    ox_theme th;
    memset(&th, 0, sizeof th);
    for (int i = 0; i < OX_SLOT_COUNT; i++) {
        ox_color_parse("default", &th.slot[i].fg);
        ox_color_parse("default", &th.slot[i].bg);
    }
    snprintf(th.name, sizeof th.name, "default");
    char line[256];
    const char *p = default_theme_text;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n < sizeof line) {
            memcpy(line, p, n);
            line[n] = '\0';
            char *eq = strchr(line, '=');
            if (eq) {
                *eq = '\0';
                char *key = trim(line), *val = trim(eq + 1);
                int slot = ox_theme_slot_from_key(key);
                char why[200];
                if (slot >= 0)
                    parse_style(val, &th.slot[slot], why, sizeof why);
            }
        }
        p += n + (e ? 1 : 0);
    }
    *t = th;
}
