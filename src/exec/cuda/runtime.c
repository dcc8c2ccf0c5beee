/* The CUDA backend's runtime (runtime.h; docs/EXECUTOR.md "CUDA backend").
 * The CUDA runtime is linked statically, so nothing here touches the
 * driver until ox_cuda_probe; cuBLAS and cuDNN are opened with dlopen when
 * the first executor for the GPU is made, and a missing one only keeps its
 * ops on the CPU. Without the toolkit (no OX_HAVE_CUDA) the probe says so
 * and everything else is a stub. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/device.h"
#include "runtime.h"
#include "emulate.h"
#include "graph.h"
#include "place_half.h"

/* The first members of both runtimes (ox_cuda_rt and emulate.c's), which
 * the entry points below read whichever one r is. */
typedef struct rt_head {
    bool emu, fp16, graphs;
} rt_head;

bool ox_device_parse(const char *s, ox_device *out)
{
    if (s && !strcmp(s, "cpu")) {
        *out = OX_DEVICE_CPU;
        return true;
    }
    if (s && !strcmp(s, "cuda")) {
        *out = OX_DEVICE_CUDA;
        return true;
    }
    return false;
}

const char *ox_device_name(ox_device d)
{
    return d == OX_DEVICE_CUDA ? "cuda" : "cpu";
}

#ifndef OX_HAVE_CUDA

struct ox_cuda_rt {
    bool emu, fp16, graphs;   /* rt_head; emu always false: only the emulation exists here */
};

static ox_cuda_state real_probe(char *line, size_t len)
{
    if (line && len)
        snprintf(line, len, "this onnxscope was built without the CUDA toolkit");
    return OX_CUDA_NOT_BUILT;
}

static ox_status real_cuda_rt_new(int n_slots, ox_cuda_rt **out, ox_error *err)
{
    (void)n_slots;
    *out = NULL;
    return ox_errorf(err, OX_EUNSUPPORTED, "this onnxscope was built without the CUDA toolkit");
}

static void real_cuda_rt_free(ox_cuda_rt *r)
{
    (void)r;
}

static void real_cuda_rt_caps(const ox_cuda_rt *r, ox_cuda_caps *caps)
{
    (void)r;
    caps->cublas = caps->cudnn = false;
}

static void real_cuda_rt_configure(ox_cuda_rt *r, bool fp16, bool graphs)
{
    r->fp16 = fp16;
    r->graphs = graphs;
}

static ox_status real_cuda_run_begin(ox_cuda_rt *r, const ox_cuda_plan *p, ox_error *err)
{
    (void)r;
    (void)p;
    return ox_errorf(err, OX_EUNSUPPORTED, "no CUDA");
}

static ox_status real_cuda_run_node(ox_cuda_rt *r, const ox_cuda_plan *p, int k, const int *in_slot,
                           const int *out_slot, ox_rval *const *host_in, ox_error *err)
{
    (void)r, (void)p, (void)k, (void)in_slot, (void)out_slot, (void)host_in;
    return ox_errorf(err, OX_EUNSUPPORTED, "no CUDA");
}

static bool real_cuda_device_only(const ox_cuda_rt *r, int s)
{
    (void)r, (void)s;
    return false;
}

static ox_status real_cuda_fetch(ox_cuda_rt *r, const ox_cuda_plan *p, int s, ox_rval **out,
                        ox_error *err)
{
    (void)r, (void)p, (void)s;
    *out = NULL;
    return ox_errorf(err, OX_EUNSUPPORTED, "no CUDA");
}

static void real_cuda_release(ox_cuda_rt *r, int s)
{
    (void)r, (void)s;
}

static ox_status real_cuda_sync(ox_cuda_rt *r, ox_error *err)
{
    (void)r, (void)err;
    return OX_OK;
}

void ox_cuda_libraries(bool *cublas, bool *cudnn)
{
    *cublas = *cudnn = false;
}

static ox_status real_cuda_run_end(ox_cuda_rt *r, ox_exec_stats *s, ox_error *err)
{
    (void)r, (void)err;
    s->h2d_copies = s->d2h_copies = 0;
    return OX_OK;
}

#else /* OX_HAVE_CUDA */

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "kern.h"
#include "contrib.h"

/* ---- probe ---------------------------------------------------------------- */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static ox_cuda_state probe_state;
static char probe_line[512];

static void probe_run(void)
{
    int n = 0, drv = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e == cudaErrorStubLibrary) {
        cudaDriverGetVersion(&drv);
        if (e == cudaErrorNoDevice) {
            probe_state = OX_CUDA_NO_DEVICE;
            snprintf(probe_line, sizeof probe_line,
                     "no CUDA device on this machine (CUDA error %d: %s)", (int)e,
                     cudaGetErrorString(e));
        } else if (drv) {
            probe_state = OX_CUDA_NO_DRIVER;
            snprintf(probe_line, sizeof probe_line,
                     "the NVIDIA driver (CUDA %d.%d) is too old for this build's CUDA %d.%d "
                     "(CUDA error %d: %s)",
                     drv / 1000, (drv % 1000) / 10, CUDART_VERSION / 1000,
                     (CUDART_VERSION % 1000) / 10, (int)e, cudaGetErrorString(e));
        } else {
            probe_state = OX_CUDA_NO_DRIVER;
            snprintf(probe_line, sizeof probe_line,
                     "no NVIDIA driver on this machine (CUDA error %d: %s)", (int)e,
                     cudaGetErrorString(e));
        }
        return;
    }
    if (e != cudaSuccess) {
        probe_state = OX_CUDA_FAILED;
        snprintf(probe_line, sizeof probe_line, "the CUDA runtime failed (CUDA error %d: %s)",
                 (int)e, cudaGetErrorString(e));
        return;
    }
    if (n <= 0) {
        probe_state = OX_CUDA_NO_DEVICE;
        snprintf(probe_line, sizeof probe_line, "no CUDA device on this machine");
        return;
    }
    struct cudaDeviceProp pr;
    memset(&pr, 0, sizeof pr);
    e = cudaGetDeviceProperties(&pr, 0);
    cudaDriverGetVersion(&drv);
    if (e != cudaSuccess) {
        probe_state = OX_CUDA_FAILED;
        snprintf(probe_line, sizeof probe_line, "cannot query CUDA device 0 (CUDA error %d: %s)",
                 (int)e, cudaGetErrorString(e));
        return;
    }
    /* The kernels are sm_90 code + compute_90 PTX: Hopper or newer. */
    if (pr.major < 9) {
        probe_state = OX_CUDA_NO_DEVICE;
        snprintf(probe_line, sizeof probe_line,
                 "%.200s is sm_%d%d; this build's kernels need sm_90 or newer", pr.name, pr.major,
                 pr.minor);
        return;
    }
    probe_state = OX_CUDA_AVAILABLE;
    snprintf(probe_line, sizeof probe_line, "%.200s, sm_%d%d, %.1f GiB, driver %d.%d", pr.name,
             pr.major, pr.minor, (double)pr.totalGlobalMem / (1024.0 * 1024 * 1024), drv / 1000,
             (drv % 1000) / 10);
}

static ox_cuda_state real_probe(char *line, size_t len)
{
    pthread_once(&probe_once, probe_run);
    if (line && len)
        snprintf(line, len, "%s", probe_line);
    return probe_state;
}

/* ---- cuBLAS and cuDNN, opened at run time -------------------------------- */

/* The workspace cuBLAS and cuBLASLt share (stream-ordered calls): set
 * explicitly so that neither allocates while a CUDA Graph is captured. */
#define LT_WS ((size_t)32 << 20)

static struct {
    bool tried, blas, dnn;
    __typeof__(cublasCreate_v2) *blas_create;
    __typeof__(cublasDestroy_v2) *blas_destroy;
    __typeof__(cublasSetStream_v2) *blas_stream;
    __typeof__(cublasSgemm_v2) *sgemm;
    __typeof__(cublasSgemmStridedBatched) *sgemm_batched;
    __typeof__(cublasGemmEx) *gemm_ex;
    __typeof__(cublasGemmStridedBatchedEx) *gemm_ex_batched;
    __typeof__(cublasSetWorkspace_v2) *blas_ws;   /* optional */
    bool lt;   /* cuBLASLt: GEMM epilogues (optional: cuBLAS + our kernel otherwise) */
    __typeof__(cublasLtCreate) *lt_create;
    __typeof__(cublasLtDestroy) *lt_destroy;
    __typeof__(cublasLtMatmulDescCreate) *lt_desc_new;
    __typeof__(cublasLtMatmulDescDestroy) *lt_desc_free;
    __typeof__(cublasLtMatmulDescSetAttribute) *lt_desc_set;
    __typeof__(cublasLtMatrixLayoutCreate) *lt_lay_new;
    __typeof__(cublasLtMatrixLayoutDestroy) *lt_lay_free;
    __typeof__(cublasLtMatmulPreferenceCreate) *lt_pref_new;
    __typeof__(cublasLtMatmulPreferenceDestroy) *lt_pref_free;
    __typeof__(cublasLtMatmulPreferenceSetAttribute) *lt_pref_set;
    __typeof__(cublasLtMatmulAlgoGetHeuristic) *lt_heur;
    __typeof__(cublasLtMatmul) *lt_matmul;
    __typeof__(cudnnCreate) *dnn_create;
    __typeof__(cudnnDestroy) *dnn_destroy;
    __typeof__(cudnnSetStream) *dnn_stream;
    __typeof__(cudnnCreateTensorDescriptor) *tdesc_new;
    __typeof__(cudnnDestroyTensorDescriptor) *tdesc_free;
    __typeof__(cudnnSetTensor4dDescriptor) *tdesc_set;
    __typeof__(cudnnCreateFilterDescriptor) *fdesc_new;
    __typeof__(cudnnDestroyFilterDescriptor) *fdesc_free;
    __typeof__(cudnnSetFilter4dDescriptor) *fdesc_set;
    __typeof__(cudnnCreateConvolutionDescriptor) *cdesc_new;
    __typeof__(cudnnDestroyConvolutionDescriptor) *cdesc_free;
    __typeof__(cudnnSetConvolution2dDescriptor) *cdesc_set;
    __typeof__(cudnnSetConvolutionGroupCount) *cdesc_groups;
    __typeof__(cudnnSetConvolutionMathType) *cdesc_math;
    __typeof__(cudnnGetConvolution2dForwardOutputDim) *conv_dims;
    __typeof__(cudnnGetConvolutionForwardAlgorithm_v7) *conv_algo;
    __typeof__(cudnnGetConvolutionForwardWorkspaceSize) *conv_ws;
    __typeof__(cudnnConvolutionForward) *conv_fwd;
} lib;
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

/* The library by its name (LD_LIBRARY_PATH, the loader's cache), then in
 * ONNXSCOPE_CUDA_LIBDIR and in the toolkit this binary was built with,
 * which is often not in the loader's search path. */
static void *open_first(const char *const *names)
{
    const char *dirs[2] = {getenv("ONNXSCOPE_CUDA_LIBDIR"), OX_CUDA_LIBDIR};
    for (int i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        for (int d = 0; d < 2; d++) {
            char path[1024];
            if (!dirs[d] || !dirs[d][0] ||
                snprintf(path, sizeof path, "%s/%s", dirs[d], names[i]) >= (int)sizeof path)
                continue;
            if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) != NULL)
                return h;
        }
    }
    return NULL;
}

#define SYM(h, field, name) (*(void **)&lib.field = dlsym(h, name)) != NULL

static void libs_load(void)
{
    pthread_mutex_lock(&lib_mu);
    if (lib.tried) {
        pthread_mutex_unlock(&lib_mu);
        return;
    }
    lib.tried = true;
    static const char *const blas_names[] = {"libcublas.so.13", "libcublas.so", NULL};
    static const char *const dnn_names[] = {"libcudnn.so.9", "libcudnn.so", NULL};
    void *b = getenv("ONNXSCOPE_CUDA_NO_CUBLAS") ? NULL : open_first(blas_names);
    lib.blas = b && SYM(b, blas_create, "cublasCreate_v2") &&
               SYM(b, blas_destroy, "cublasDestroy_v2") &&
               SYM(b, blas_stream, "cublasSetStream_v2") && SYM(b, sgemm, "cublasSgemm_v2") &&
               SYM(b, sgemm_batched, "cublasSgemmStridedBatched") &&
               SYM(b, gemm_ex, "cublasGemmEx") &&
               SYM(b, gemm_ex_batched, "cublasGemmStridedBatchedEx");
    if (b && !(SYM(b, blas_ws, "cublasSetWorkspace_v2")))
        lib.blas_ws = NULL;
    static const char *const lt_names[] = {"libcublasLt.so.13", "libcublasLt.so", NULL};
    void *l = lib.blas && !getenv("ONNXSCOPE_CUDA_NO_CUBLASLT") ? open_first(lt_names) : NULL;
    lib.lt = l && SYM(l, lt_create, "cublasLtCreate") && SYM(l, lt_destroy, "cublasLtDestroy") &&
             SYM(l, lt_desc_new, "cublasLtMatmulDescCreate") &&
             SYM(l, lt_desc_free, "cublasLtMatmulDescDestroy") &&
             SYM(l, lt_desc_set, "cublasLtMatmulDescSetAttribute") &&
             SYM(l, lt_lay_new, "cublasLtMatrixLayoutCreate") &&
             SYM(l, lt_lay_free, "cublasLtMatrixLayoutDestroy") &&
             SYM(l, lt_pref_new, "cublasLtMatmulPreferenceCreate") &&
             SYM(l, lt_pref_free, "cublasLtMatmulPreferenceDestroy") &&
             SYM(l, lt_pref_set, "cublasLtMatmulPreferenceSetAttribute") &&
             SYM(l, lt_heur, "cublasLtMatmulAlgoGetHeuristic") &&
             SYM(l, lt_matmul, "cublasLtMatmul");
    void *d = getenv("ONNXSCOPE_CUDA_NO_CUDNN") ? NULL : open_first(dnn_names);
    lib.dnn = d && SYM(d, dnn_create, "cudnnCreate") && SYM(d, dnn_destroy, "cudnnDestroy") &&
              SYM(d, dnn_stream, "cudnnSetStream") &&
              SYM(d, tdesc_new, "cudnnCreateTensorDescriptor") &&
              SYM(d, tdesc_free, "cudnnDestroyTensorDescriptor") &&
              SYM(d, tdesc_set, "cudnnSetTensor4dDescriptor") &&
              SYM(d, fdesc_new, "cudnnCreateFilterDescriptor") &&
              SYM(d, fdesc_free, "cudnnDestroyFilterDescriptor") &&
              SYM(d, fdesc_set, "cudnnSetFilter4dDescriptor") &&
              SYM(d, cdesc_new, "cudnnCreateConvolutionDescriptor") &&
              SYM(d, cdesc_free, "cudnnDestroyConvolutionDescriptor") &&
              SYM(d, cdesc_set, "cudnnSetConvolution2dDescriptor") &&
              SYM(d, cdesc_groups, "cudnnSetConvolutionGroupCount") &&
              SYM(d, cdesc_math, "cudnnSetConvolutionMathType") &&
              SYM(d, conv_dims, "cudnnGetConvolution2dForwardOutputDim") &&
              SYM(d, conv_algo, "cudnnGetConvolutionForwardAlgorithm_v7") &&
              SYM(d, conv_ws, "cudnnGetConvolutionForwardWorkspaceSize") &&
              SYM(d, conv_fwd, "cudnnConvolutionForward");
    pthread_mutex_unlock(&lib_mu);
}

void ox_cuda_libraries(bool *cublas, bool *cudnn)
{
    libs_load();
    *cublas = lib.blas;
    *cudnn = lib.dnn;
}

/* ---- the runtime ------------------------------------------------------------ */

typedef struct wbuf {
    void *dev;
    int64_t bytes;
    const void *src;   /* host data uploaded (initializers: re-upload on change) */
    uint64_t plan;     /* plan constants (hostshape.h): the plan uploaded for */
} wbuf;

struct ox_cuda_rt {
    bool emu, fp16, graphs;   /* rt_head (emu false here) */
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *lt_ws;              /* cuBLASLt workspace (LT_WS bytes) */
    void *hbuf;               /* float16 copies of GEMM/Conv operands */
    int64_t hbuf_cap;
    ox_cuda_graphs gr;
    cudaGraphExec_t gexec;    /* the captured graph of gr's plan */
    const ox_cuda_plan *plan; /* of the run in progress */
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    char *arena;
    int64_t arena_cap;
    int n_slots;
    wbuf *w;                  /* per slot: weights on the device */
    unsigned char *dev_valid; /* per slot: this run's value is on the device */
    unsigned char *host_has;  /* per slot: a host copy was taken this run */
    void *scratch;            /* cuDNN workspace, attention temporaries */
    int64_t scratch_cap;
    void *pinned;             /* staging for transfers */
    int64_t pinned_cap;
    cudaEvent_t staged;       /* the last upload from `pinned` is done */
    int64_t h2d, d2h;
};

static void real_cuda_rt_free(ox_cuda_rt *r);

static ox_status cuda_err(ox_error *err, cudaError_t e, const char *what)
{
    return ox_errorf(err, e == cudaErrorMemoryAllocation ? OX_ENOMEM : OX_EINVAL,
                     "%s: CUDA error %d: %s", what, (int)e, cudaGetErrorString(e));
}

static void real_cuda_rt_caps(const ox_cuda_rt *r, ox_cuda_caps *caps)
{
    caps->cublas = r && r->blas;
    caps->cudnn = r && r->dnn;
}

static ox_status real_cuda_rt_new(int n_slots, ox_cuda_rt **out, ox_error *err)
{
    char why[512];
    *out = NULL;
    if (real_probe(why, sizeof why) != OX_CUDA_AVAILABLE)
        return ox_errorf(err, OX_EUNSUPPORTED, "%s", why);
    ox_cuda_rt *r = calloc(1, sizeof *r);
    if (!r)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    r->n_slots = n_slots;
    r->w = calloc((size_t)n_slots + 1, sizeof *r->w);
    r->dev_valid = calloc((size_t)n_slots + 1, 1);
    r->host_has = calloc((size_t)n_slots + 1, 1);
    if (!r->w || !r->dev_valid || !r->host_has) {
        real_cuda_rt_free(r);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&r->staged, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        real_cuda_rt_free(r);
        return cuda_err(err, e, "cannot start the CUDA device");
    }
    libs_load();
    if (lib.blas && lib.blas_create(&r->blas) == CUBLAS_STATUS_SUCCESS) {
        lib.blas_stream(r->blas, r->stream);   /* (resets the workspace: set it after) */
        if (cudaMalloc(&r->lt_ws, LT_WS) != cudaSuccess)
            r->lt_ws = NULL;
        if (r->lt_ws && lib.blas_ws)
            lib.blas_ws(r->blas, r->lt_ws, LT_WS);
    } else {
        r->blas = NULL;
    }
    if (lib.dnn && lib.dnn_create(&r->dnn) == CUDNN_STATUS_SUCCESS)
        lib.dnn_stream(r->dnn, r->stream);
    else
        r->dnn = NULL;
    if (!r->blas || !lib.lt || lib.lt_create(&r->lt) != CUBLAS_STATUS_SUCCESS)
        r->lt = NULL;
    *out = r;
    return OX_OK;
}

static void real_cuda_rt_free(ox_cuda_rt *r)
{
    if (!r)
        return;
    if (r->stream)
        cudaStreamSynchronize(r->stream);
    for (int s = 0; r->w && s < r->n_slots; s++)
        if (r->w[s].dev)
            cudaFree(r->w[s].dev);
    if (r->arena)
        cudaFree(r->arena);
    if (r->scratch)
        cudaFree(r->scratch);
    if (r->hbuf)
        cudaFree(r->hbuf);
    if (r->lt_ws)
        cudaFree(r->lt_ws);
    if (r->lt)
        lib.lt_destroy(r->lt);
    if (r->gexec)
        cudaGraphExecDestroy(r->gexec);
    ox_cuda_graphs_free(&r->gr);
    if (r->pinned)
        cudaFreeHost(r->pinned);
    if (r->blas)
        lib.blas_destroy(r->blas);
    if (r->dnn)
        lib.dnn_destroy(r->dnn);
    if (r->staged)
        cudaEventDestroy(r->staged);
    if (r->stream)
        cudaStreamDestroy(r->stream);
    free(r->w);
    free(r->dev_valid);
    free(r->host_has);
    free(r);
}

static ox_status real_cuda_run_begin(ox_cuda_rt *r, const ox_cuda_plan *p, ox_error *err)
{
    if (p->n_slots > r->n_slots)
        return ox_errorf(err, OX_EINVAL, "CUDA plan has more slots than the runtime");
    if (p->arena_bytes > r->arena_cap) {
        if (r->arena) {
            cudaStreamSynchronize(r->stream);
            cudaFree(r->arena);
            r->arena = NULL;
            r->arena_cap = 0;
        }
        cudaError_t e = cudaMalloc((void **)&r->arena, (size_t)p->arena_bytes);
        if (e != cudaSuccess)
            return cuda_err(err, e, "device arena");
        r->arena_cap = p->arena_bytes;
    }
    memset(r->dev_valid, 0, (size_t)r->n_slots);
    memset(r->host_has, 0, (size_t)r->n_slots);
    r->h2d = r->d2h = 0;
    r->plan = p;
    bool reset;
    ox_cuda_graphs_begin(&r->gr, p, &reset);
    if (reset && r->gexec) {
        cudaGraphExecDestroy(r->gexec);
        r->gexec = NULL;
    }
    if (r->gr.mode == OX_CG_REPLAY && !r->gexec)
        r->gr.mode = OX_CG_EAGER;   /* defensive: READY without a graph */
    return OX_OK;
}

static ox_status grow_pinned(ox_cuda_rt *r, int64_t bytes, ox_error *err)
{
    if (bytes <= r->pinned_cap)
        return OX_OK;
    cudaStreamSynchronize(r->stream);
    if (r->pinned)
        cudaFreeHost(r->pinned);
    r->pinned = NULL;
    r->pinned_cap = 0;
    cudaError_t e = cudaHostAlloc(&r->pinned, (size_t)bytes, cudaHostAllocDefault);
    if (e != cudaSuccess)
        return cuda_err(err, e, "pinned host buffer");
    r->pinned_cap = bytes;
    return OX_OK;
}

static ox_status grow_scratch(ox_cuda_rt *r, int64_t bytes, ox_error *err)
{
    if (bytes <= r->scratch_cap)
        return OX_OK;
    cudaStreamSynchronize(r->stream);
    if (r->scratch)
        cudaFree(r->scratch);
    r->scratch = NULL;
    r->scratch_cap = 0;
    cudaError_t e = cudaMalloc(&r->scratch, (size_t)bytes);
    if (e != cudaSuccess)
        return cuda_err(err, e, "device scratch");
    r->scratch_cap = bytes;
    return OX_OK;
}

/* Host -> device through the pinned buffer (the previous upload from it
 * must be done before it is overwritten). */
static ox_status upload(ox_cuda_rt *r, void *dev, const void *host, int64_t bytes, ox_error *err)
{
    if (bytes <= 0)
        return OX_OK;
    ox_status st = grow_pinned(r, bytes, err);
    if (st)
        return st;
    cudaEventSynchronize(r->staged);
    memcpy(r->pinned, host, (size_t)bytes);
    cudaError_t e = cudaMemcpyAsync(dev, r->pinned, (size_t)bytes, cudaMemcpyHostToDevice,
                                    r->stream);
    if (e == cudaSuccess)
        e = cudaEventRecord(r->staged, r->stream);
    if (e != cudaSuccess)
        return cuda_err(err, e, "upload");
    r->h2d++;
    return OX_OK;
}

static ox_status grow_hbuf(ox_cuda_rt *r, int64_t bytes, ox_error *err)
{
    if (bytes <= r->hbuf_cap)
        return OX_OK;
    cudaStreamSynchronize(r->stream);
    if (r->hbuf)
        cudaFree(r->hbuf);
    r->hbuf = NULL;
    r->hbuf_cap = 0;
    cudaError_t e = cudaMalloc(&r->hbuf, (size_t)bytes);
    if (e != cudaSuccess)
        return cuda_err(err, e, "device float16 buffer");
    r->hbuf_cap = bytes;
    return OX_OK;
}

/* A weight of an fp16 plan: converted on the host (ox_cuda_to_half, round
 * to nearest even) and uploaded as float16, half the bytes. */
static ox_status upload_half(ox_cuda_rt *r, void *dev, const ox_tensor *t, ox_error *err)
{
    uint16_t *h = malloc((size_t)t->numel * 2 + 2);
    if (!h)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ox_cuda_to_half(ox_tensor_data(t), h, t->numel);
    ox_status st = upload(r, dev, h, t->numel * 2, err);
    free(h);
    return st;
}

/* Device pointer of input slot s, uploading the host value t when needed.
 * t NULL: a re-issued node, whose device values are there by order. */
static ox_status in_ptr_t(ox_cuda_rt *r, const ox_cuda_plan *p, int s, const ox_tensor *t,
                          const void **out, ox_error *err)
{
    *out = NULL;
    if (s < 0 || s >= p->n_slots)
        return OX_OK;
    const ox_cuda_slot *sl = &p->slot[s];
    if (sl->off >= 0) {
        if (!r->dev_valid[s] && t) {
            if ((int64_t)t->nbytes != sl->nbytes || t->dtype != sl->dtype)
                return ox_errorf(err, OX_EINVAL, "value of slot %d is not where the CUDA plan "
                                 "expects it", s);
            ox_status st = upload(r, r->arena + sl->off, ox_tensor_data(t), sl->nbytes, err);
            if (st)
                return st;
            r->dev_valid[s] = 1;
            r->host_has[s] = 1;   /* it came from the host: never downloaded */
        }
        *out = r->arena + sl->off;
        return OX_OK;
    }
    /* A weight: its own buffer, uploaded once; an initializer again when a
     * caller overrides it (IR < 4) with other data. A fed value (a CPU
     * node's, hostshape.h): its own buffer too, uploaded every run. */
    wbuf *w = &r->w[s];
    if (sl->fed && t) {
        if (w->dev && w->bytes != (int64_t)t->nbytes) {
            cudaStreamSynchronize(r->stream);
            cudaFree(w->dev);
            w->dev = NULL;
        }
        if (!w->dev) {
            cudaError_t e = cudaMalloc(&w->dev, t->nbytes ? t->nbytes : 1);
            if (e != cudaSuccess) {
                w->dev = NULL;
                return cuda_err(err, e, "device buffer of a CPU node's value");
            }
            w->bytes = (int64_t)t->nbytes;
        }
        if (!r->dev_valid[s]) {
            ox_status st = upload(r, w->dev, ox_tensor_data(t), w->bytes, err);
            if (st)
                return st;
            r->dev_valid[s] = 1;
            r->host_has[s] = 1;
        }
        *out = w->dev;
        return OX_OK;
    }
    if (!t) {
        if (!w->dev)
            return ox_errorf(err, OX_EINVAL, "weight of slot %d has no host value", s);
        *out = w->dev;
        return OX_OK;
    }
    const void *src = ox_tensor_data(t);
    bool half = sl->half && t->dtype == OX_DT_FLOAT;
    if (w->dev && w->bytes == (int64_t)t->nbytes && (!sl->init || w->src == src) &&
        (!sl->pconst || w->plan == p->id)) {
        *out = w->dev;
        return OX_OK;
    }
    if (w->dev && w->bytes != (int64_t)t->nbytes) {
        cudaStreamSynchronize(r->stream);
        cudaFree(w->dev);
        w->dev = NULL;
    }
    if (!w->dev) {
        size_t nb = half ? (size_t)t->numel * 2 : t->nbytes;
        cudaError_t e = cudaMalloc(&w->dev, nb ? nb : 1);
        if (e != cudaSuccess) {
            w->dev = NULL;
            return cuda_err(err, e, "weight upload");
        }
    }
    w->bytes = (int64_t)t->nbytes;
    w->src = src;
    w->plan = p->id;
    ox_status st = half ? upload_half(r, w->dev, t, err) : upload(r, w->dev, src, w->bytes, err);
    if (st)
        return st;
    *out = w->dev;
    return OX_OK;
}

static ox_status in_ptr(ox_cuda_rt *r, const ox_cuda_plan *p, int s, const ox_rval *host,
                        const void **out, ox_error *err)
{
    const ox_tensor *t = host && host->kind == OX_RV_TENSOR ? host->t : NULL;
    if (s >= 0 && s < p->n_slots && !t &&
        (p->slot[s].off < 0 || !r->dev_valid[s]))
        return ox_errorf(err, OX_EINVAL, "value of slot %d is not where the CUDA plan "
                         "expects it", s);
    return in_ptr_t(r, p, s, t, out, err);
}

static ox_status flush(ox_cuda_rt *r, ox_error *err);
static void capture(ox_cuda_rt *r);

static bool real_cuda_device_only(const ox_cuda_rt *r, int s)
{
    return r && s >= 0 && s < r->n_slots && r->dev_valid[s] && !r->host_has[s];
}

static ox_status real_cuda_fetch(ox_cuda_rt *r, const ox_cuda_plan *p, int s, ox_rval **out,
                        ox_error *err)
{
    *out = NULL;
    ox_status fst = flush(r, err);
    if (fst)
        return fst;
    const ox_cuda_slot *sl = &p->slot[s];
    if (sl->off < 0 || !r->dev_valid[s])
        return ox_errorf(err, OX_EINVAL, "slot %d is not on the device", s);
    ox_tensor *t = ox_tensor_new(sl->dtype, sl->rank, sl->dims);
    if (!t)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ox_status st = grow_pinned(r, sl->nbytes, err);
    if (st) {
        ox_tensor_free(t);
        return st;
    }
    cudaEventSynchronize(r->staged);
    cudaError_t e = cudaMemcpyAsync(r->pinned, r->arena + sl->off, (size_t)sl->nbytes,
                                    cudaMemcpyDeviceToHost, r->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(r->stream);
    if (e != cudaSuccess) {
        ox_tensor_free(t);
        return cuda_err(err, e, "download");
    }
    if (sl->nbytes)
        memcpy(ox_tensor_mutable_data(t), r->pinned, (size_t)sl->nbytes);
    *out = ox_rval_tensor(t);
    if (!*out)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    r->host_has[s] = 1;
    r->d2h++;
    return OX_OK;
}

static void real_cuda_release(ox_cuda_rt *r, int s)
{
    if (r && s >= 0 && s < r->n_slots) {
        r->dev_valid[s] = 0;
        r->host_has[s] = 0;
    }
}

static ox_status real_cuda_sync(ox_cuda_rt *r, ox_error *err)
{
    ox_status st = flush(r, err);
    if (st)
        return st;
    cudaError_t e = cudaStreamSynchronize(r->stream);
    return e == cudaSuccess ? OX_OK : cuda_err(err, e, "CUDA node");
}

static ox_status real_cuda_run_end(ox_cuda_rt *r, ox_exec_stats *s, ox_error *err)
{
    ox_status st = flush(r, err);
    cudaError_t e = cudaStreamSynchronize(r->stream);
    s->h2d_copies = r->h2d;
    s->d2h_copies = r->d2h;
    if (!st && e != cudaSuccess)
        st = cuda_err(err, e, "CUDA run");
    /* A complete recording (every GPU node of the plan ran): capture it. */
    if (!st && r->gr.mode == OX_CG_RECORD && r->plan && r->gr.n_tape == r->plan->nodes_on[1])
        capture(r);
    ox_cuda_graphs_stats(&r->gr, s);
    r->plan = NULL;
    return st;
}

/* ---- node runners --------------------------------------------------------- */

typedef struct nctx {
    ox_cuda_rt *r;
    const ox_cuda_plan *p;
    int k;                 /* the node's index in the plan */
    const ox_node *n;      /* the clone's node: static types */
    bool half;             /* fp16 operands (p->half[k]) */
    bool b_half;           /* input 1 is a weight uploaded as float16 */
    int ep;                /* ox_cuda_epilogue of a head (out[0] is then the last
                            * fused node's slot) */
    const float *ep_bias;  /* its bias on the device */
    int64_t opset;
    int n_in, n_out;
    const void *in[16];
    const ox_cuda_slot *is[16];
    const ox_rval *hin[16];
    void *out[8];
    const ox_cuda_slot *os[8];
    ox_error *err;
} nctx;

static ox_status kchk(nctx *c, int rc)
{
    if (rc)
        return ox_errorf(c->err, OX_EINVAL, "CUDA kernel launch: error %d: %s", rc,
                         cudaGetErrorString((cudaError_t)rc));
    return OX_OK;
}

static int64_t numel_s(const ox_cuda_slot *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++)
        n *= s->dims[d];
    return n;
}

static void contig(int rank, const int64_t *dims, int64_t *str)
{
    int64_t c = 1;
    for (int d = rank - 1; d >= 0; d--) {
        str[d] = c;
        c *= dims[d];
    }
}

/* Strides of an input of shape s broadcast to an output of rank `rank`. */
static void bcast_str(const ox_cuda_slot *s, int rank, const int64_t *odims, int64_t *str)
{
    int64_t cs[OX_MAX_RANK];
    contig(s->rank, s->dims, cs);
    for (int d = 0; d < rank; d++) {
        int j = d - (rank - s->rank);
        str[d] = (j < 0 || s->dims[j] == 1 || odims[d] == 1) ? 0 : cs[j];
    }
}

static int elem_bytes(ox_dtype dt)
{
    return ox_dtype_bits(dt) / 8;
}

static double host_scalar(const ox_rval *v, double dflt)
{
    const ox_tensor *t = v && v->kind == OX_RV_TENSOR ? v->t : NULL;
    return t && t->numel >= 1 ? ox_tensor_get_f64(t, 0) : dflt;
}

static int unary_code(const ox_node *n)
{
    static const struct {
        const char *op;
        int code;
    } map[] = {
        {"Relu", OX_CK_RELU}, {"Sigmoid", OX_CK_SIGMOID}, {"Tanh", OX_CK_TANH},
        {"Exp", OX_CK_EXP}, {"Log", OX_CK_LOG}, {"Sqrt", OX_CK_SQRT}, {"Erf", OX_CK_ERF},
        {"Neg", OX_CK_NEG}, {"Abs", OX_CK_ABS}, {"Reciprocal", OX_CK_RECIPROCAL},
        {"Clip", OX_CK_CLIP}, {"LeakyRelu", OX_CK_LEAKYRELU}, {"Gelu", OX_CK_GELU},
        {"HardSigmoid", OX_CK_HARDSIGMOID}, {"HardSwish", OX_CK_HARDSWISH},
        {"Floor", OX_CK_FLOOR}, {"Ceil", OX_CK_CEIL},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(n->op_type, map[i].op))
            return map[i].code;
    return OX_CK_IDENTITY;
}

static ox_status run_unary(nctx *c)
{
    int op = unary_code(c->n);
    float a = 0, b = 0;
    if (op == OX_CK_CLIP) {
        if (c->opset < 11) {
            a = ox_node_attr_f(c->n, "min", -INFINITY);
            b = ox_node_attr_f(c->n, "max", INFINITY);
        } else {
            a = c->n_in > 1 && c->hin[1] ? (float)host_scalar(c->hin[1], -INFINITY) : -INFINITY;
            b = c->n_in > 2 && c->hin[2] ? (float)host_scalar(c->hin[2], INFINITY) : INFINITY;
        }
    } else if (op == OX_CK_LEAKYRELU) {
        a = ox_node_attr_f(c->n, "alpha", 0.01f);
    } else if (op == OX_CK_HARDSIGMOID) {
        a = ox_node_attr_f(c->n, "alpha", 0.2f);
        b = ox_node_attr_f(c->n, "beta", 0.5f);
    }
    return kchk(c, ox_ck_unary(op, c->in[0], c->out[0], numel_s(c->os[0]), a, b, c->r->stream));
}

static int binary_code(const ox_node *n)
{
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"};
    for (int i = 0; i < 7; i++)
        if (!strcmp(n->op_type, ops[i]))
            return i;   /* OX_CK_ADD .. OX_CK_MIN in this order */
    return OX_CK_ADD;
}

static ox_status run_binary(nctx *c)
{
    const ox_cuda_slot *y = c->os[0];
    int64_t as[OX_MAX_RANK], bs[OX_MAX_RANK];
    bcast_str(c->is[0], y->rank, y->dims, as);
    bcast_str(c->is[1], y->rank, y->dims, bs);
    return kchk(c, ox_ck_binary(binary_code(c->n), c->in[0], c->in[1], c->out[0], y->rank,
                                y->dims, as, bs, numel_s(y), c->r->stream));
}

static ox_status run_where(nctx *c)
{
    const ox_cuda_slot *y = c->os[0];
    int64_t cs[OX_MAX_RANK], xs[OX_MAX_RANK], zs[OX_MAX_RANK];
    bcast_str(c->is[0], y->rank, y->dims, cs);
    bcast_str(c->is[1], y->rank, y->dims, xs);
    bcast_str(c->is[2], y->rank, y->dims, zs);
    return kchk(c, ox_ck_where(c->in[0], c->in[1], c->in[2], c->out[0], y->rank, y->dims, cs,
                               xs, zs, numel_s(y), c->r->stream));
}

static ox_status run_reshape(nctx *c)
{
    if (c->in[0] == c->out[0] || c->os[0]->nbytes == 0)
        return OX_OK;
    cudaError_t e = cudaMemcpyAsync(c->out[0], c->in[0], (size_t)c->os[0]->nbytes,
                                    cudaMemcpyDeviceToDevice, c->r->stream);
    return e == cudaSuccess ? OX_OK : cuda_err(c->err, e, "copy");
}

/* y (contiguous) = x viewed through xoff/xstr over y's dims. */
static ox_status strided(nctx *c, const void *x, void *y, const ox_cuda_slot *ys, int64_t xoff,
                         const int64_t *xstr)
{
    int64_t ystr[OX_MAX_RANK];
    contig(ys->rank, ys->dims, ystr);
    return kchk(c, ox_ck_copy(x, y, elem_bytes(ys->dtype), ys->rank, ys->dims, xoff, xstr, 0,
                              ystr, numel_s(ys), c->r->stream));
}

static ox_status run_cast(nctx *c)
{
    /* The onnx type codes of place.c's Cast list are kern.h's OX_CK_T_*. */
    if (c->is[0]->dtype == c->os[0]->dtype)
        return run_reshape(c);
    return kchk(c, ox_ck_cast(c->in[0], (int)c->is[0]->dtype, c->out[0], (int)c->os[0]->dtype,
                              numel_s(c->os[0]), c->r->stream));
}

static ox_status run_transpose(nctx *c)
{
    const ox_cuda_slot *x = c->is[0], *y = c->os[0];
    int64_t xs[OX_MAX_RANK], str[OX_MAX_RANK];
    contig(x->rank, x->dims, xs);
    const int64_t *perm;
    int np = ox_node_attr_ints(c->n, "perm", &perm);
    for (int d = 0; d < y->rank; d++) {
        int64_t pd = np == y->rank ? perm[d] : y->rank - 1 - d;
        if (pd < 0 || pd >= x->rank)
            return ox_errorf(c->err, OX_EINVAL, "bad perm");
        str[d] = xs[pd];
    }
    return strided(c, c->in[0], c->out[0], y, 0, str);
}

static ox_status run_expand(nctx *c)
{
    const ox_cuda_slot *y = c->os[0];
    int64_t xs[OX_MAX_RANK];
    bcast_str(c->is[0], y->rank, y->dims, xs);
    return strided(c, c->in[0], c->out[0], y, 0, xs);
}

static ox_status run_concat(nctx *c)
{
    const ox_cuda_slot *y = c->os[0];
    int axis = (int)ox_node_attr_i(c->n, "axis", 0);
    if (axis < 0)
        axis += y->rank;
    int64_t ystr[OX_MAX_RANK], at = 0;
    contig(y->rank, y->dims, ystr);
    for (int i = 0; i < c->n_in; i++) {
        const ox_cuda_slot *x = c->is[i];
        int64_t xs[OX_MAX_RANK];
        contig(x->rank, x->dims, xs);
        ox_status st = kchk(c, ox_ck_copy(c->in[i], c->out[0], elem_bytes(y->dtype), x->rank,
                                          x->dims, 0, xs, at * ystr[axis], ystr, numel_s(x),
                                          c->r->stream));
        if (st)
            return st;
        at += x->dims[axis];
    }
    return OX_OK;
}

static ox_status run_split(nctx *c)
{
    const ox_cuda_slot *x = c->is[0];
    int axis = (int)ox_node_attr_i(c->n, "axis", 0);
    if (axis < 0)
        axis += x->rank;
    int64_t xs[OX_MAX_RANK], at = 0;
    contig(x->rank, x->dims, xs);
    for (int i = 0; i < c->n_out; i++) {
        /* The clone's type gives every output's extent, written or not. */
        const ox_value *ov = c->n->outputs[i];
        if (!ov || !ov->type || ov->type->rank != x->rank)
            return ox_errorf(c->err, OX_EINVAL, "Split output %d has no static shape", i);
        const ox_cuda_slot *y = c->os[i];
        if (y && c->out[i]) {
            ox_status st = strided(c, c->in[0], c->out[i], y, at * xs[axis], xs);
            if (st)
                return st;
        }
        at += ov->type->dims[axis].value;
    }
    return OX_OK;
}

static ox_status run_slice(nctx *c)
{
    const ox_cuda_slot *x = c->is[0], *y = c->os[0];
    int64_t xs[OX_MAX_RANK], str[OX_MAX_RANK], start[OX_MAX_RANK], step[OX_MAX_RANK];
    contig(x->rank, x->dims, xs);
    for (int d = 0; d < x->rank; d++) {
        start[d] = 0;
        step[d] = 1;
    }
    const ox_tensor *ts = NULL, *te = NULL, *ta = NULL, *tp = NULL;
    const int64_t *as = NULL, *aa = NULL;
    int n_s = 0, n_a = 0;
    if (c->opset >= 10) {
        ts = c->n_in > 1 && c->hin[1] ? c->hin[1]->t : NULL;
        te = c->n_in > 2 && c->hin[2] ? c->hin[2]->t : NULL;
        ta = c->n_in > 3 && c->hin[3] ? c->hin[3]->t : NULL;
        tp = c->n_in > 4 && c->hin[4] ? c->hin[4]->t : NULL;
        if (!ts || !te)
            return ox_errorf(c->err, OX_EINVAL, "Slice starts/ends not on the host");
        n_s = (int)ts->numel;
    } else {
        n_s = ox_node_attr_ints(c->n, "starts", &as);
        n_a = ox_node_attr_ints(c->n, "axes", &aa);
        if (n_s < 0)
            n_s = 0;
    }
    for (int i = 0; i < n_s; i++) {
        int64_t ax = ta ? ox_tensor_get_i64(ta, i) : (aa && i < n_a) ? aa[i] : i;
        if (ax < 0)
            ax += x->rank;
        if (ax < 0 || ax >= x->rank)
            return ox_errorf(c->err, OX_EINVAL, "Slice axis out of range");
        int64_t s = ts ? ox_tensor_get_i64(ts, i) : as[i];
        int64_t p = tp ? ox_tensor_get_i64(tp, i) : 1;
        int64_t dim = x->dims[ax];
        if (p == 0)
            return ox_errorf(c->err, OX_EINVAL, "Slice step 0");
        if (s < 0)
            s += dim;
        if (p > 0)
            s = s < 0 ? 0 : s > dim ? dim : s;
        else
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
        start[ax] = s;
        step[ax] = p;
    }
    int64_t off = 0;
    for (int d = 0; d < x->rank; d++) {
        off += start[d] * xs[d];
        str[d] = xs[d] * step[d];
    }
    (void)te;
    return strided(c, c->in[0], c->out[0], y, off, str);
}

static ox_status run_gather(nctx *c)
{
    const ox_cuda_slot *x = c->is[0];
    int axis = (int)ox_node_attr_i(c->n, "axis", 0);
    if (axis < 0)
        axis += x->rank;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    return kchk(c, ox_ck_gather(c->in[0], c->in[1], c->is[1]->dtype == OX_DT_INT32, c->out[0],
                                elem_bytes(x->dtype), outer, x->dims[axis], inner,
                                numel_s(c->is[1]), c->r->stream));
}

static int reduce_code(const ox_node *n)
{
    const char *o = n->op_type;
    return !strcmp(o, "ReduceMean")        ? OX_CK_RMEAN
           : !strcmp(o, "ReduceMax")       ? OX_CK_RMAX
           : !strcmp(o, "ReduceMin")       ? OX_CK_RMIN
           : !strcmp(o, "ReduceSumSquare") ? OX_CK_RSUMSQ
           : !strcmp(o, "ReduceL2")        ? OX_CK_RL2
                                           : OX_CK_RSUM;
}

/* Reduces x over the axes marked in red[] into y (kept axes in order). */
static ox_status reduce_axes(nctx *c, int op, const void *x, void *y, const ox_cuda_slot *xs,
                             const bool *red)
{
    int64_t str[OX_MAX_RANK], kd[OX_MAX_RANK], ks[OX_MAX_RANK], rd[OX_MAX_RANK], rs[OX_MAX_RANK];
    int nk = 0, nr = 0;
    int64_t n_out = 1, n_red = 1;
    contig(xs->rank, xs->dims, str);
    for (int d = 0; d < xs->rank; d++) {
        if (red[d]) {
            rd[nr] = xs->dims[d];
            rs[nr++] = str[d];
            n_red *= xs->dims[d];
        } else {
            kd[nk] = xs->dims[d];
            ks[nk++] = str[d];
            n_out *= xs->dims[d];
        }
    }
    return kchk(c, ox_ck_reduce(op, x, y, n_out, nk, kd, ks, nr, rd, rs, n_red, c->r->stream));
}

static ox_status run_reduce(nctx *c)
{
    const ox_cuda_slot *x = c->is[0];
    bool red[OX_MAX_RANK] = {0};
    const int64_t *aa = NULL;
    int na = 0;
    const ox_tensor *ta = c->n_in > 1 && c->hin[1] ? c->hin[1]->t : NULL;
    if (ta)
        na = (int)ta->numel;
    else
        na = ox_node_attr_ints(c->n, "axes", &aa);
    if (na < 0)
        na = 0;   /* absent */
    if (na == 0) {
        if (ox_node_attr_i(c->n, "noop_with_empty_axes", 0))
            return run_reshape(c);
        for (int d = 0; d < x->rank; d++)
            red[d] = true;
    }
    for (int i = 0; i < na; i++) {
        int64_t a = ta ? ox_tensor_get_i64(ta, i) : aa[i];
        if (a < 0)
            a += x->rank;
        if (a < 0 || a >= x->rank)
            return ox_errorf(c->err, OX_EINVAL, "reduce axis out of range");
        red[a] = true;
    }
    return reduce_axes(c, reduce_code(c->n), c->in[0], c->out[0], x, red);
}

static ox_status run_globalpool(nctx *c)
{
    bool red[OX_MAX_RANK] = {0};
    for (int d = 2; d < c->is[0]->rank; d++)
        red[d] = true;
    int op = !strcmp(c->n->op_type, "GlobalMaxPool") ? OX_CK_RMAX : OX_CK_RMEAN;
    return reduce_axes(c, op, c->in[0], c->out[0], c->is[0], red);
}

static ox_status run_softmax(nctx *c)
{
    const ox_cuda_slot *x = c->is[0];
    int r = x->rank;
    int axis = (int)ox_node_attr_i(c->n, "axis", c->opset < 13 ? 1 : -1);
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis >= (r ? r : 1))
        return ox_errorf(c->err, OX_EINVAL, "bad softmax axis");
    int64_t outer = 1, len = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    if (c->opset < 13) {
        for (int d = axis; d < r; d++)
            len *= x->dims[d];
    } else {
        len = r ? x->dims[axis] : 1;
        for (int d = axis + 1; d < r; d++)
            inner *= x->dims[d];
    }
    return kchk(c, ox_ck_softmax(c->in[0], c->out[0], outer, len, inner,
                                 !strcmp(c->n->op_type, "LogSoftmax"), c->r->stream));
}

static ox_status run_layernorm(nctx *c)
{
    const ox_cuda_slot *x = c->is[0];
    const char *op = c->n->op_type;
    bool skip = !strcmp(op, "SkipLayerNormalization");
    bool rms = !strcmp(op, "SimplifiedLayerNormalization");
    int axis = skip ? -1 : (int)ox_node_attr_i(c->n, "axis", -1);
    if (axis < 0)
        axis += x->rank;
    int64_t cols = 1;
    for (int d = axis; d < x->rank; d++)
        cols *= x->dims[d];
    int64_t rows = cols ? numel_s(x) / cols : 0;
    float eps = ox_node_attr_f(c->n, "epsilon", skip ? 1e-12f : 1e-5f);
    const float *gamma, *beta, *bias = NULL, *sk = NULL;
    if (skip) {
        sk = c->in[1];
        gamma = c->in[2];
        beta = c->n_in > 3 ? c->in[3] : NULL;
        bias = c->n_in > 4 ? c->in[4] : NULL;
    } else {
        gamma = c->in[1];
        beta = !rms && c->n_in > 2 ? c->in[2] : NULL;
    }
    float *sum = skip && c->n_out > 3 ? c->out[3] : NULL;
    return kchk(c, ox_ck_layernorm(c->in[0], sk, bias, gamma, beta, c->out[0], sum, rows, cols,
                                   eps, rms, c->r->stream));
}

static ox_status run_batchnorm(nctx *c)
{
    const ox_cuda_slot *x = c->is[0];
    int64_t inner = 1;
    for (int d = 2; d < x->rank; d++)
        inner *= x->dims[d];
    float eps = ox_node_attr_f(c->n, "epsilon", 1e-5f);
    return kchk(c, ox_ck_batchnorm(c->in[0], c->out[0], c->in[1], c->in[2], c->in[3], c->in[4],
                                   eps, x->dims[0], x->dims[1], inner, c->r->stream));
}

static ox_status blas_chk(nctx *c, cublasStatus_t s)
{
    if (s != CUBLAS_STATUS_SUCCESS)
        return ox_errorf(c->err, OX_EINVAL, "cuBLAS error %d", (int)s);
    return OX_OK;
}

/* Row-major C (m x n) = A (m x k) . B (k x n), `batch` times with element
 * strides sa, sb (0: shared) and m*n for C: cuBLAS is column-major, so it
 * computes C^T = B^T . A^T with the operands swapped. */
static ox_status gemm_rm(nctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, const float *b, float beta, float *y, int64_t batch,
                         int64_t sa, int64_t sb)
{
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batch > INT32_MAX)
        return ox_errorf(c->err, OX_EINVAL, "matrix too large for cuBLAS");
    int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n);
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (batch == 1)
        return blas_chk(c, lib.sgemm(c->r->blas, ob, oa, (int)n, (int)m, (int)k, &alpha, b, ldb,
                                     a, lda, &beta, y, (int)n));
    return blas_chk(c, lib.sgemm_batched(c->r->blas, ob, oa, (int)n, (int)m, (int)k, &alpha, b,
                                         ldb, sb, a, lda, sa, &beta, y, (int)n, m * n,
                                         (int)batch));
}

static int ep_act(int ep)
{
    return ep == OX_EP_RELU_BIAS         ? OX_CK_RELU
           : ep == OX_EP_GELU_ERF_BIAS   ? OX_CK_GELU
           : ep == OX_EP_GELU_TANH_BIAS  ? OX_CK_GELU_TANH
                                         : OX_CK_IDENTITY;
}

/* One row-major GEMM (m x n, no batch) with its epilogue on cuBLASLt;
 * false when cuBLASLt is not loaded or offers no algorithm (the caller
 * falls back). Lt's A is our B and its B our A, as in gemm_rm. ERF GELU
 * has no Lt epilogue: BIAS here, the caller's kernel after. */
static bool lt_gemm(nctx *c, cudaDataType_t dt, bool ta, bool tb, int64_t m, int64_t n,
                    int64_t k, float alpha, const void *a, const void *b, float *y)
{
    ox_cuda_rt *r = c->r;
    if (!r->lt || !c->ep_bias)
        return false;
    if (!r->lt_ws && cudaMalloc(&r->lt_ws, LT_WS) != cudaSuccess) {
        r->lt_ws = NULL;
        return false;
    }
    cublasLtMatmulDesc_t d = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pr = NULL;
    cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t e = c->ep == OX_EP_RELU_BIAS       ? CUBLASLT_EPILOGUE_RELU_BIAS
                           : c->ep == OX_EP_GELU_TANH_BIAS ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                            : CUBLASLT_EPILOGUE_BIAS;
    cudaDataType_t bt = CUDA_R_32F;
    const void *bias = c->ep_bias;
    uint64_t ws = LT_WS;
    float beta = 0.f;
    cublasLtMatmulHeuristicResult_t res;
    int got = 0;
    bool ok =
        lib.lt_desc_new(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
        lib.lt_desc_set(d, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa) ==
            CUBLAS_STATUS_SUCCESS &&
        lib.lt_desc_set(d, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb) ==
            CUBLAS_STATUS_SUCCESS &&
        lib.lt_desc_set(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e) == CUBLAS_STATUS_SUCCESS &&
        lib.lt_desc_set(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) ==
            CUBLAS_STATUS_SUCCESS &&
        lib.lt_desc_set(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt) ==
            CUBLAS_STATUS_SUCCESS &&
        lib.lt_lay_new(&la, dt, (uint64_t)(tb ? k : n), (uint64_t)(tb ? n : k), tb ? k : n) ==
            CUBLAS_STATUS_SUCCESS &&
        lib.lt_lay_new(&lb, dt, (uint64_t)(ta ? m : k), (uint64_t)(ta ? k : m), ta ? m : k) ==
            CUBLAS_STATUS_SUCCESS &&
        lib.lt_lay_new(&lc, CUDA_R_32F, (uint64_t)n, (uint64_t)m, n) == CUBLAS_STATUS_SUCCESS &&
        lib.lt_pref_new(&pr) == CUBLAS_STATUS_SUCCESS &&
        lib.lt_pref_set(pr, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) ==
            CUBLAS_STATUS_SUCCESS &&
        lib.lt_heur(r->lt, d, la, lb, lc, lc, pr, 1, &res, &got) == CUBLAS_STATUS_SUCCESS &&
        got > 0 &&
        lib.lt_matmul(r->lt, d, &alpha, b, la, a, lb, &beta, y, lc, y, lc, &res.algo, r->lt_ws,
                      LT_WS, r->stream) == CUBLAS_STATUS_SUCCESS;
    if (pr)
        lib.lt_pref_free(pr);
    if (lc)
        lib.lt_lay_free(lc);
    if (lb)
        lib.lt_lay_free(lb);
    if (la)
        lib.lt_lay_free(la);
    if (d)
        lib.lt_desc_free(d);
    return ok;
}

/* The GEMM of an fp16 node or an epilogue head (row-major, as gemm_rm):
 * float16 operands when c->half (A converted per run into hbuf; B too
 * unless it is a weight uploaded as float16), float32 accumulation and
 * output; the epilogue on cuBLASLt when it takes it (one GEMM), else
 * cuBLAS GemmEx and our bias/activation kernel. na, nb: elements of a, b. */
static ox_status gemm_any(nctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                          float alpha, const float *a, int64_t na, const void *b, int64_t nb,
                          float beta, float *y, int64_t batch, int64_t sa, int64_t sb)
{
    if (!c->half && !c->ep)
        return gemm_rm(c, ta, tb, m, n, k, alpha, a, b, beta, y, batch, sa, sb);
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batch > INT32_MAX)
        return ox_errorf(c->err, OX_EINVAL, "matrix too large for cuBLAS");
    const void *pa = a, *pb = b;
    cudaDataType_t dt = CUDA_R_32F;
    if (c->half) {
        bool conv_b = !c->b_half;
        ox_status st = grow_hbuf(c->r, (na + (conv_b ? nb : 0)) * 2, c->err);
        if (st)
            return st;
        uint16_t *ah = c->r->hbuf;
        if ((st = kchk(c, ox_ck_f32_to_f16(a, ah, na, c->r->stream))))
            return st;
        pa = ah;
        if (conv_b) {
            if ((st = kchk(c, ox_ck_f32_to_f16(b, ah + na, nb, c->r->stream))))
                return st;
            pb = ah + na;
        }
        dt = CUDA_R_16F;
    }
    if (c->ep && batch == 1 && beta == 0.f && lt_gemm(c, dt, ta, tb, m, n, k, alpha, pa, pb, y)) {
        if (c->ep != OX_EP_GELU_ERF_BIAS)
            return OX_OK;
        return kchk(c, ox_ck_unary(OX_CK_GELU, y, y, m * n, 0, 0, c->r->stream));
    }
    int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n);
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    ox_status st;
    if (batch == 1)
        st = blas_chk(c, lib.gemm_ex(c->r->blas, ob, oa, (int)n, (int)m, (int)k, &alpha, pb, dt,
                                     ldb, pa, dt, lda, &beta, y, CUDA_R_32F, (int)n,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        st = blas_chk(c, lib.gemm_ex_batched(c->r->blas, ob, oa, (int)n, (int)m, (int)k, &alpha,
                                             pb, dt, ldb, sb, pa, dt, lda, sa, &beta, y,
                                             CUDA_R_32F, (int)n, m * n, (int)batch,
                                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    if (st || !c->ep)
        return st;
    return kchk(c, ox_ck_bias_act(y, c->ep_bias, batch * m * n, n, 1, ep_act(c->ep), 0, 0,
                                  c->r->stream));
}

static ox_status run_matmul(nctx *c)
{
    const ox_cuda_slot *a = c->is[0], *b = c->is[1];
    int64_t m = a->dims[a->rank - 2], k = a->dims[a->rank - 1], n = b->dims[b->rank - 1];
    int64_t ba = (m * k) != 0 ? numel_s(a) / (m * k) : 0;
    int64_t bb = (k * n) != 0 ? numel_s(b) / (k * n) : 0;
    int64_t batch = ba > bb ? ba : bb;
    if (numel_s(c->os[0]) == 0)
        return OX_OK;
    if (k == 0) {
        ox_status st = cuda_err(c->err, cudaMemsetAsync(c->out[0], 0, (size_t)c->os[0]->nbytes,
                                                        c->r->stream), "memset");
        if (st || !c->ep)
            return st;
        return kchk(c, ox_ck_bias_act(c->out[0], c->ep_bias, numel_s(c->os[0]), n, 1,
                                      ep_act(c->ep), 0, 0, c->r->stream));
    }
    /* A batched against one B: a single GEMM with ba*m rows. */
    if (bb == 1)
        return gemm_any(c, false, false, ba * m, n, k, 1.f, c->in[0], numel_s(a), c->in[1],
                        numel_s(b), 0.f, c->out[0], 1, 0, 0);
    return gemm_any(c, false, false, m, n, k, 1.f, c->in[0], numel_s(a), c->in[1], numel_s(b),
                    0.f, c->out[0], batch, ba == 1 ? 0 : m * k, k * n);
}

static ox_status run_gemm(nctx *c)
{
    const ox_cuda_slot *a = c->is[0], *y = c->os[0];
    bool ta = ox_node_attr_i(c->n, "transA", 0), tb = ox_node_attr_i(c->n, "transB", 0);
    float alpha = ox_node_attr_f(c->n, "alpha", 1.f), beta = ox_node_attr_f(c->n, "beta", 1.f);
    int64_t m = y->dims[0], n = y->dims[1], k = ta ? a->dims[0] : a->dims[1];
    /* An epilogue head adds C (its bias) in the epilogue instead. */
    bool has_c = c->n_in > 2 && c->in[2] && beta != 0.f && !c->ep;
    if (has_c) {
        int64_t cs[OX_MAX_RANK];
        bcast_str(c->is[2], 2, y->dims, cs);
        ox_status st = strided(c, c->in[2], c->out[0], y, 0, cs);
        if (st)
            return st;
    }
    if (m * n == 0)
        return OX_OK;
    return gemm_any(c, ta, tb, m, n, k, alpha, c->in[0], numel_s(a), c->in[1], numel_s(c->is[1]),
                    has_c ? beta : 0.f, c->out[0], 1, 0, 0);
}

static ox_status dnn_chk(nctx *c, cudnnStatus_t s, const char *what)
{
    if (s != CUDNN_STATUS_SUCCESS)
        return ox_errorf(c->err, OX_EINVAL, "cuDNN %s: error %d", what, (int)s);
    return OX_OK;
}

static ox_status run_conv(nctx *c)
{
    const ox_cuda_slot *x = c->is[0], *w = c->is[1], *y = c->os[0];
    const int64_t *pv, *sv, *dv;
    int np = ox_node_attr_ints(c->n, "pads", &pv);
    int ns = ox_node_attr_ints(c->n, "strides", &sv);
    int nd = ox_node_attr_ints(c->n, "dilations", &dv);
    int group = (int)ox_node_attr_i(c->n, "group", 1);
    int ph = np == 4 ? (int)pv[0] : 0, pw = np == 4 ? (int)pv[1] : 0;
    int sh = ns == 2 ? (int)sv[0] : 1, sw = ns == 2 ? (int)sv[1] : 1;
    int dh = nd == 2 ? (int)dv[0] : 1, dw = nd == 2 ? (int)dv[1] : 1;
    cudnnTensorDescriptor_t xd = NULL, yd = NULL;
    cudnnFilterDescriptor_t fd = NULL;
    cudnnConvolutionDescriptor_t cd = NULL;
    ox_status st = OX_OK;
    /* fp16: x (and W unless uploaded as float16) converted into hbuf, y
     * made there in float16 and widened into the output; cuDNN accumulates
     * in float32 (compute type FLOAT: its "pseudo half" configuration). */
    cudnnDataType_t dt = c->half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    const void *px = c->in[0], *pwt = c->in[1];
    void *py = c->out[0];
    if (c->half) {
        int64_t nx = numel_s(x), nw = numel_s(w), ny = numel_s(y);
        bool conv_w = !c->b_half;
        if ((st = grow_hbuf(c->r, (nx + (conv_w ? nw : 0) + ny) * 2, c->err)))
            return st;
        uint16_t *h = c->r->hbuf;
        if ((st = kchk(c, ox_ck_f32_to_f16(c->in[0], h, nx, c->r->stream))))
            return st;
        px = h;
        h += nx;
        if (conv_w) {
            if ((st = kchk(c, ox_ck_f32_to_f16(c->in[1], h, nw, c->r->stream))))
                return st;
            pwt = h;
            h += nw;
        }
        py = h;
    }
    if ((st = dnn_chk(c, lib.tdesc_new(&xd), "descriptor")) ||
        (st = dnn_chk(c, lib.tdesc_new(&yd), "descriptor")) ||
        (st = dnn_chk(c, lib.fdesc_new(&fd), "descriptor")) ||
        (st = dnn_chk(c, lib.cdesc_new(&cd), "descriptor")))
        goto out;
    if ((st = dnn_chk(c, lib.tdesc_set(xd, CUDNN_TENSOR_NCHW, dt, (int)x->dims[0],
                                       (int)x->dims[1], (int)x->dims[2], (int)x->dims[3]),
                      "input")) ||
        (st = dnn_chk(c, lib.tdesc_set(yd, CUDNN_TENSOR_NCHW, dt, (int)y->dims[0],
                                       (int)y->dims[1], (int)y->dims[2], (int)y->dims[3]),
                      "output")) ||
        (st = dnn_chk(c, lib.fdesc_set(fd, dt, CUDNN_TENSOR_NCHW, (int)w->dims[0],
                                       (int)w->dims[1], (int)w->dims[2], (int)w->dims[3]),
                      "filter")) ||
        (st = dnn_chk(c, lib.cdesc_set(cd, ph, pw, sh, sw, dh, dw, CUDNN_CROSS_CORRELATION,
                                       CUDNN_DATA_FLOAT),
                      "convolution")) ||
        (st = dnn_chk(c, lib.cdesc_groups(cd, group), "groups")) ||
        /* Plain fp32: TF32 tensor cores would miss the 1e-3 tolerance;
         * fp16 is what tensor cores are for. */
        (st = dnn_chk(c, lib.cdesc_math(cd, c->half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
                      "math type")))
        goto out;
    int on, oc, oh, ow;
    if ((st = dnn_chk(c, lib.conv_dims(cd, xd, fd, &on, &oc, &oh, &ow), "output size")))
        goto out;
    if (on != y->dims[0] || oc != y->dims[1] || oh != y->dims[2] || ow != y->dims[3]) {
        st = ox_errorf(c->err, OX_ESHAPE, "cuDNN output %dx%dx%dx%d differs from the plan", on, oc,
                       oh, ow);
        goto out;
    }
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int got = 0;
    if ((st = dnn_chk(c, lib.conv_algo(c->r->dnn, xd, fd, cd, yd, 8, &got, perf), "algorithm")))
        goto out;
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    size_t ws = 0;
    for (int i = 0; i < got; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ((size_t)1 << 30)) {
            algo = perf[i].algo;
            break;
        }
    if ((st = dnn_chk(c, lib.conv_ws(c->r->dnn, xd, fd, cd, yd, algo, &ws), "workspace")) ||
        (st = grow_scratch(c->r, (int64_t)ws, c->err)))
        goto out;
    float one = 1.f, zero = 0.f;
    if ((st = dnn_chk(c, lib.conv_fwd(c->r->dnn, &one, xd, px, fd, pwt, cd, algo,
                                      c->r->scratch, ws, &zero, yd, py),
                      "forward")))
        goto out;
    if (c->half &&
        (st = kchk(c, ox_ck_f16_to_f32(py, c->out[0], numel_s(y), c->r->stream))))
        goto out;
    if (c->n_in > 2 && c->in[2])
        st = kchk(c, ox_ck_bias_act(c->out[0], c->in[2], numel_s(y), y->dims[1],
                                    y->dims[2] * y->dims[3], OX_CK_IDENTITY, 0, 0, c->r->stream));
out:
    if (cd)
        lib.cdesc_free(cd);
    if (fd)
        lib.fdesc_free(fd);
    if (yd)
        lib.tdesc_free(yd);
    if (xd)
        lib.tdesc_free(xd);
    return st;
}

static ox_status run_pool(nctx *c)
{
    const ox_cuda_slot *x = c->is[0], *y = c->os[0];
    const int64_t *kv, *pv, *sv, *dv;
    ox_node_attr_ints(c->n, "kernel_shape", &kv);
    int np = ox_node_attr_ints(c->n, "pads", &pv);
    int ns = ox_node_attr_ints(c->n, "strides", &sv);
    int nd = ox_node_attr_ints(c->n, "dilations", &dv);
    bool avg = !strcmp(c->n->op_type, "AveragePool");
    return kchk(c, ox_ck_pool2d(c->in[0], c->out[0], x->dims[0], x->dims[1], x->dims[2],
                                x->dims[3], y->dims[2], y->dims[3], (int)kv[0], (int)kv[1],
                                ns == 2 ? (int)sv[0] : 1, ns == 2 ? (int)sv[1] : 1,
                                np == 4 ? (int)pv[0] : 0, np == 4 ? (int)pv[1] : 0,
                                np == 4 ? (int)pv[2] : 0, np == 4 ? (int)pv[3] : 0,
                                nd == 2 ? (int)dv[0] : 1, nd == 2 ? (int)dv[1] : 1, avg,
                                avg && ox_node_attr_i(c->n, "count_include_pad", 0),
                                c->r->stream));
}

/* float16 nodes: run_half.inc's runners (docs/EXECUTOR.md "float16 models
 * on the GPU"); data movement is type-blind and falls through; dispatch() asks
 * half_runner first. */
#include "run_half.inc"

/* com.microsoft Attention: QKV projection (cuBLAS), heads split by a
 * strided copy, scores and context by batched GEMMs, the scaled masked
 * softmax by our kernel, heads merged back. Temporaries in the scratch. */
static ox_status run_attention(nctx *c)
{
    const ox_cuda_slot *x = c->is[0];
    int64_t B = x->dims[0], S = x->dims[1], Hin = x->dims[2], H = c->os[0]->dims[2];
    int64_t heads = ox_node_attr_i(c->n, "num_heads", 1), d = H / heads;
    int causal = (int)ox_node_attr_i(c->n, "unidirectional", 0);
    /* The tiled kernel needs no S x S scores (nor the context buffer). */
    bool flash = c->p->flash[c->k];
    int64_t n_qkv = B * S * 3 * H, n_sc = flash ? 0 : B * heads * S * S,
            n_ctx = flash ? 0 : B * S * H;
    ox_status st = grow_scratch(c->r, (2 * n_qkv + n_sc + n_ctx) * (int64_t)sizeof(float),
                                c->err);
    if (st)
        return st;
    float *qkv = c->r->scratch, *heads_qkv = qkv + n_qkv, *sc = heads_qkv + n_qkv,
          *ctx = sc + n_sc;
    if ((st = gemm_any(c, false, false, B * S, 3 * H, Hin, 1.f, c->in[0], B * S * Hin, c->in[1],
                       Hin * 3 * H, 0.f, qkv, 1, 0, 0)))
        return st;
    if (c->n_in > 2 && c->in[2] &&
        (st = kchk(c, ox_ck_bias_act(qkv, c->in[2], n_qkv, 3 * H, 1, OX_CK_IDENTITY, 0, 0,
                                     c->r->stream))))
        return st;
    /* (B, S, 3, heads, d) -> (3, B, heads, S, d). */
    int64_t dims5[5] = {3, B, heads, S, d}, xs5[5] = {H, S * 3 * H, d, 3 * H, 1}, ys5[5];
    contig(5, dims5, ys5);
    if ((st = kchk(c, ox_ck_copy(qkv, heads_qkv, 4, 5, dims5, 0, xs5, 0, ys5, n_qkv,
                                 c->r->stream))))
        return st;
    int64_t n_head = B * S * H;   /* one of Q, K, V */
    const float *q = heads_qkv, *k = heads_qkv + n_head, *v = heads_qkv + 2 * n_head;
    /* Long sequences: the tiled kernel (no S x S scores in memory), which
     * writes (B, S, heads, d) itself. */
    if (flash)
        return kchk(c, ox_ck_flash_attn(q, k, v, c->n_in > 3 ? c->in[3] : NULL, c->out[0], B,
                                        heads, S, d, 1.f / sqrtf((float)d), causal,
                                        c->r->stream));
    /* scores (S x S, row = query) = Q . K^T per (batch, head). */
    float one = 1.f, zero = 0.f;
    if ((st = blas_chk(c, lib.sgemm_batched(c->r->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)S, (int)S,
                                            (int)d, &one, k, (int)d, S * d, q, (int)d, S * d,
                                            &zero, sc, (int)S, S * S, (int)(B * heads)))))
        return st;
    const int32_t *mask = c->n_in > 3 ? c->in[3] : NULL;
    if ((st = kchk(c, ox_ck_attn_softmax(sc, mask, B, heads, S, S, 1.f / sqrtf((float)d), causal,
                                         c->r->stream))))
        return st;
    /* context (S x d) = P . V. */
    if ((st = blas_chk(c, lib.sgemm_batched(c->r->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)d, (int)S,
                                            (int)S, &one, v, (int)d, S * d, sc, (int)S, S * S,
                                            &zero, ctx, (int)d, S * d, (int)(B * heads)))))
        return st;
    /* (B, heads, S, d) -> (B, S, heads, d). */
    int64_t dims4[4] = {B, S, heads, d}, xs4[4] = {heads * S * d, d, S * d, 1}, ys4[4];
    contig(4, dims4, ys4);
    return kchk(c, ox_ck_copy(ctx, c->out[0], 4, 4, dims4, 0, xs4, 0, ys4, n_ctx, c->r->stream));
}

/* contrib.h: FusedConv/FusedGemm run as Conv/Gemm, then contrib_rt.c adds
 * their activation; the other ops launch from contrib_rt.c. */
static ox_status run_contrib(nctx *c)
{
    ox_cuda_kind kind = (ox_cuda_kind)c->p->kind[c->k];
    ox_status st = kind == OX_CK_K_FUSEDCONV ? run_conv(c)
                   : kind == OX_CK_K_FUSEDGEMM ? run_gemm(c) : OX_OK;
    ox_cuda_kargs a = {.kind = kind, .n = c->n, .n_in = c->n_in, .n_out = c->n_out,
                       .stream = c->r->stream};
    memcpy(a.in, c->in, sizeof a.in);
    memcpy(a.is, c->is, sizeof a.is);
    memcpy(a.out, c->out, sizeof a.out);
    memcpy(a.os, c->os, sizeof a.os);
    return st ? st : kchk(c, ox_cuda_contrib_launch(&a));
}

static ox_status dispatch(nctx *c)
{
    ox_status (*half)(nctx *) = half_runner(c);
    if (half)
        return half(c);
    switch ((ox_cuda_kind)c->p->kind[c->k]) {
    case OX_CK_K_UNARY: return run_unary(c);
    case OX_CK_K_BINARY: return run_binary(c);
    case OX_CK_K_WHERE: return run_where(c);
    case OX_CK_K_RESHAPE: return run_reshape(c);
    case OX_CK_K_TRANSPOSE: return run_transpose(c);
    case OX_CK_K_CONCAT: return run_concat(c);
    case OX_CK_K_SLICE: return run_slice(c);
    case OX_CK_K_SPLIT: return run_split(c);
    case OX_CK_K_GATHER: return run_gather(c);
    case OX_CK_K_EXPAND: return run_expand(c);
    case OX_CK_K_REDUCE: return run_reduce(c);
    case OX_CK_K_SOFTMAX: return run_softmax(c);
    case OX_CK_K_LAYERNORM: return run_layernorm(c);
    case OX_CK_K_BATCHNORM: return run_batchnorm(c);
    case OX_CK_K_MATMUL: return run_matmul(c);
    case OX_CK_K_GEMM: return run_gemm(c);
    case OX_CK_K_CONV: return run_conv(c);
    case OX_CK_K_POOL: return run_pool(c);
    case OX_CK_K_GLOBALPOOL: return run_globalpool(c);
    case OX_CK_K_ATTENTION: return run_attention(c);
    case OX_CK_K_CAST: return run_cast(c);
    case OX_CK_K_FUSED: return OX_OK;   /* its epilogue head wrote the output */
    case OX_CK_K_SUM: case OX_CK_K_BIASGELU: case OX_CK_K_EMBEDLN: case OX_CK_K_MHA:
    case OX_CK_K_FUSEDCONV: case OX_CK_K_FUSEDGEMM: case OX_CK_K_MASKOP: return run_contrib(c);
    default: return ox_errorf(c->err, OX_EINVAL, "node is not placed on the GPU");
    }
}

/* Enqueues node k: device pointers of its inputs (uploading host values
 * unless re-issued: host_in then holds the tape's parameters only) and
 * outputs, then its kernels. */
static ox_status issue(ox_cuda_rt *r, const ox_cuda_plan *p, int k, const int *in_slot,
                       const int *out_slot, ox_rval *const *host_in, bool reissue,
                       ox_error *err)
{
    nctx c = {.r = r, .p = p, .k = k, .n = p->cnode[k], .err = err};
    c.n_in = c.n->n_inputs;
    c.n_out = c.n->n_outputs;
    if (c.n_in > 16 || c.n_out > 8)
        return ox_errorf(err, OX_EINVAL, "too many inputs for the CUDA backend");
    if (p->kind[k] == OX_CK_K_FUSED)
        return OX_OK;
    c.opset = ox_model_opset(p->clone, c.n->domain ? c.n->domain : "");
    if (c.opset < 0)
        c.opset = 1000;
    c.half = p->half[k];
    c.ep = p->ep[k];
    for (int i = 0; i < c.n_in; i++) {
        int s = in_slot[i];
        c.hin[i] = host_in[i];
        if (s < 0)
            continue;
        c.is[i] = &p->slot[s];
        /* Parameters are read on the host (c.hin): never uploaded. */
        if (ox_cuda_input_on_host((ox_cuda_kind)p->kind[k], i))
            continue;
        ox_status st = reissue ? in_ptr_t(r, p, s, NULL, &c.in[i], err)
                               : in_ptr(r, p, s, host_in[i], &c.in[i], err);
        if (st)
            return st;
    }
    c.b_half = c.half && c.n_in > 1 && in_slot[1] >= 0 && p->slot[in_slot[1]].half &&
               p->slot[in_slot[1]].off < 0;
    for (int i = 0; i < c.n_out; i++) {
        int s = out_slot[i];
        if (s < 0 || p->slot[s].off < 0)
            continue;
        c.os[i] = &p->slot[s];
        c.out[i] = r->arena + p->slot[s].off;
    }
    if (c.ep) {
        /* The head writes the last fused node's value (same shape). */
        int s = p->ep_out[k];
        c.os[0] = &p->slot[s];
        c.out[0] = r->arena + p->slot[s].off;
        const void *bp = NULL;
        ox_status st = in_ptr_t(r, p, p->ep_bias[k], reissue ? NULL : p->ep_bias_host[k], &bp,
                                err);
        if (st)
            return st;
        c.ep_bias = bp;
    }
    if (!c.out[0] && p->kind[k] != OX_CK_K_SPLIT)
        return ox_errorf(err, OX_EINVAL, "output 0 has no device slot");
    return dispatch(&c);
}

/* Re-issues tape entries [0, n): the capture, or a run catching up. */
static ox_status reissue(ox_cuda_rt *r, int n, ox_error *err)
{
    for (int t = 0; t < n; t++) {
        const ox_cuda_tape_ent *e = &r->gr.tape[t];
        ox_status st = issue(r, r->plan, e->k, e->in_slot, e->out_slot,
                             (ox_rval *const *)e->param, true, err);
        if (st)
            return st;
    }
    return OX_OK;
}

static ox_status flush(ox_cuda_rt *r, ox_error *err)
{
    int n = 0;
    if (ox_cuda_graphs_flush(&r->gr, &n)) {
        cudaError_t e = cudaGraphLaunch(r->gexec, r->stream);
        return e == cudaSuccess ? OX_OK : cuda_err(err, e, "CUDA Graph launch");
    }
    return reissue(r, n, err);
}

/* After the recording run: the tape re-issued on a capturing stream
 * (nothing executes; every buffer exists already, so nothing allocates),
 * then instantiated. Any failure leaves the plan running eagerly. */
static void capture(ox_cuda_rt *r)
{
    ox_error err = {0};
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamBeginCapture(r->stream, cudaStreamCaptureModeThreadLocal);
    ox_status st = e == cudaSuccess ? reissue(r, r->gr.n_tape, &err) : OX_OK;
    if (e == cudaSuccess) {
        cudaError_t e2 = cudaStreamEndCapture(r->stream, &g);
        if (!st && e2 != cudaSuccess)
            e = e2;
    }
    if (e == cudaSuccess && !st && g)
        e = cudaGraphInstantiate(&r->gexec, g, 0);
    if (g)
        cudaGraphDestroy(g);
    if (e != cudaSuccess || st) {
        char why[160];
        snprintf(why, sizeof why, "%.150s", st ? err.msg : cudaGetErrorString(e));
        cudaGetLastError();   /* clears a capture error: the stream is usable again */
        r->gexec = NULL;
        ox_cuda_graphs_captured(&r->gr, false, why);
        return;
    }
    ox_cuda_graphs_captured(&r->gr, true, NULL);
}

static ox_status real_cuda_run_node(ox_cuda_rt *r, const ox_cuda_plan *p, int k, const int *in_slot,
                           const int *out_slot, ox_rval *const *host_in, ox_error *err)
{
    const ox_node *n = p->cnode[k];
    if (n->n_inputs > 16 || n->n_outputs > 8)
        return ox_errorf(err, OX_EINVAL, "too many inputs for the CUDA backend");
    int n_catch = 0;
    int act = ox_cuda_graphs_node(&r->gr, p, k, in_slot, out_slot, host_in, &n_catch);
    ox_status st = OX_OK;
    if (act == OX_CG_SKIP) {
        /* The graph does the work: this run's uploads and residency only. */
        for (int i = 0; i < n->n_inputs && !st; i++) {
            const void *d;
            if (in_slot[i] >= 0 && p->kind[k] != OX_CK_K_FUSED &&
                !ox_cuda_input_on_host((ox_cuda_kind)p->kind[k], i))
                st = in_ptr(r, p, in_slot[i], host_in[i], &d, err);
        }
    } else {
        if (act == OX_CG_CATCHUP)
            st = reissue(r, n_catch, err);
        if (!st)
            st = issue(r, p, k, in_slot, out_slot, host_in, false, err);
    }
    if (st)
        return st;
    for (int i = 0; i < n->n_outputs; i++)
        if (out_slot[i] >= 0 && p->slot[out_slot[i]].off >= 0) {
            r->dev_valid[out_slot[i]] = 1;
            r->host_has[out_slot[i]] = 0;
        }
    return OX_OK;
}

static void real_cuda_rt_configure(ox_cuda_rt *r, bool fp16, bool graphs)
{
    r->fp16 = fp16;
    r->graphs = r->gr.allowed = graphs;
}

#endif /* OX_HAVE_CUDA */

/* ---- the public entry points: the emulated device (tests) or the real one -- */

ox_cuda_state ox_cuda_probe(char *line, size_t len)
{
    /* ONNXSCOPE_NO_CUDA=1 hides the GPU (tests of the fallback paths). */
    const char *off = getenv("ONNXSCOPE_NO_CUDA");
    if (off && *off && strcmp(off, "0")) {
        if (line && len)
            snprintf(line, len, "CUDA disabled by ONNXSCOPE_NO_CUDA");
        return OX_CUDA_NO_DEVICE;
    }
    if (ox_cuda_emu_enabled()) {
        if (line && len)
            snprintf(line, len, "emulated CUDA device (ONNXSCOPE_CUDA_EMULATE: CPU kernels, "
                                "for tests)");
        return OX_CUDA_AVAILABLE;
    }
    return real_probe(line, len);
}

ox_status ox_cuda_rt_new(int n_slots, ox_cuda_rt **out, ox_error *err)
{
    char why[512];
    *out = NULL;
    if (ox_cuda_probe(why, sizeof why) != OX_CUDA_AVAILABLE)
        return ox_errorf(err, OX_EUNSUPPORTED, "%s", why);
    if (ox_cuda_emu_enabled())
        return ox_cuda_emu_new(n_slots, (void **)out, err);
    return real_cuda_rt_new(n_slots, out, err);
}

void ox_cuda_rt_free(ox_cuda_rt *r)
{
    if (r && r->emu)
        ox_cuda_emu_free(r);
    else
        real_cuda_rt_free(r);
}

void ox_cuda_rt_caps(const ox_cuda_rt *r, ox_cuda_caps *caps)
{
    if (r && r->emu)
        caps->cublas = caps->cudnn = true;
    else
        real_cuda_rt_caps(r, caps);
    const rt_head *h = (const rt_head *)r;
    caps->fp16 = h && h->fp16;
    caps->graphs = h && h->graphs;
}

void ox_cuda_rt_configure(ox_cuda_rt *r, bool fp16, bool graphs)
{
    if (!r)
        return;
    if (r->emu)
        ox_cuda_emu_configure(r, fp16, graphs);
    else
        real_cuda_rt_configure(r, fp16, graphs);
}

void ox_cuda_plan_stats(const ox_cuda_plan *p, ox_exec_stats *s)
{
    s->fp16_nodes = p->n_half;
    s->float16_nodes = 0;
    for (int k = 0; k < p->n_nodes; k++)
        if (p->kind[k] != OX_CK_NONE && p->cnode[k] && ox_cuda_node_is_half(p->cnode[k]))
            s->float16_nodes++;
    s->epilogue_nodes = p->n_epilogue;
    s->flash_nodes = p->n_flash;
    s->plan_shape_nodes = p->n_pconst;
    s->cuda_graph = OX_CUDA_GRAPH_OFF;
    snprintf(s->cuda_graph_note, sizeof s->cuda_graph_note, "%s",
             p->graph_why ? p->graph_why : "");
}

ox_status ox_cuda_run_begin(ox_cuda_rt *r, const ox_cuda_plan *p, ox_error *err)
{
    return r->emu ? ox_cuda_emu_begin(r, p, err) : real_cuda_run_begin(r, p, err);
}

ox_status ox_cuda_run_node(ox_cuda_rt *r, const ox_cuda_plan *p, int k, const int *in_slot,
                           const int *out_slot, ox_rval *const *host_in, ox_error *err)
{
    if (r->emu)
        return ox_cuda_emu_run_node(r, p, k, in_slot, out_slot, host_in, err);
    return real_cuda_run_node(r, p, k, in_slot, out_slot, host_in, err);
}

bool ox_cuda_device_only(const ox_cuda_rt *r, int s)
{
    if (!r)
        return false;
    return r->emu ? ox_cuda_emu_device_only(r, s) : real_cuda_device_only(r, s);
}

ox_status ox_cuda_fetch(ox_cuda_rt *r, const ox_cuda_plan *p, int s, ox_rval **out,
                        ox_error *err)
{
    return r->emu ? ox_cuda_emu_fetch(r, p, s, out, err) : real_cuda_fetch(r, p, s, out, err);
}

void ox_cuda_release(ox_cuda_rt *r, int s)
{
    if (r && r->emu)
        ox_cuda_emu_release(r, s);
    else
        real_cuda_release(r, s);
}

ox_status ox_cuda_sync(ox_cuda_rt *r, ox_error *err)
{
    return r->emu ? OX_OK : real_cuda_sync(r, err);
}

ox_status ox_cuda_run_end(ox_cuda_rt *r, ox_exec_stats *s, ox_error *err)
{
    if (r->emu)
        return ox_cuda_emu_end(r, s, err);
    return real_cuda_run_end(r, s, err);
}
