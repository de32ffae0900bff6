/* Greedy decoding with a language model exported by ExecuTorch's LLM path
 * (export_llama with -kv) and compiled by ptec: ids in, ids out.
 *
 *     ptec compile model.pte -o model.so --header model.h
 *     cc -O2 -I. decode.c model.so -lm -o decode
 *     LD_LIBRARY_PATH=. ./decode [--steps N] PROMPT_ID...
 *
 * The method `forward` takes the tokens of one call (int64 [1, n]) and the
 * position of the first (int64 [1]), and returns the logits (of the last
 * token, or of each); its KV cache is state of the instance, so the prompt
 * runs once (prefill) and each generated token then runs alone (decode),
 * one position further. Prints the N generated ids (default 32) on one
 * line, then the prefill's and the decoding's speed on a second. Exits 1
 * on any error, with ptec's message on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"

static int fail(const char *what, const char *detail) {
    fprintf(stderr, "error: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return 1;
}

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

/* An IEEE half or a bfloat16 (the top half of a float) as a float. */
static float from_half(uint16_t bits) {
    uint32_t sign = (uint32_t)(bits & 0x8000) << 16;
    uint32_t exponent = (bits >> 10) & 0x1f;
    uint32_t mantissa = bits & 0x3ff;
    uint32_t out;
    if (exponent == 0x1f) {
        out = sign | 0x7f800000 | (mantissa << 13);
    } else if (exponent != 0) {
        out = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        out = sign;
    } else {
        /* A subnormal half is a normal float. */
        int shift = 0;
        while (!(mantissa & 0x400)) { mantissa <<= 1; shift++; }
        out = sign | ((uint32_t)(113 - shift) << 23) | ((mantissa & 0x3ff) << 13);
    }
    float value;
    memcpy(&value, &out, sizeof value);
    return value;
}

static float from_bfloat16(uint16_t bits) {
    uint32_t out = (uint32_t)bits << 16;
    float value;
    memcpy(&value, &out, sizeof value);
    return value;
}

/* The position of the largest of `count` logits (the first, on ties, as
 * torch.argmax) of a float element type; -1 when there are none. */
static int64_t argmax(const void *data, int32_t dtype, int64_t count) {
    int64_t best = -1;
    float largest = 0;
    for (int64_t i = 0; i < count; i++) {
        float value;
        switch (dtype) {
        case PTEC_FLOAT32: value = ((const float *)data)[i]; break;
        case PTEC_FLOAT16: value = from_half(((const uint16_t *)data)[i]); break;
        case PTEC_BFLOAT16: value = from_bfloat16(((const uint16_t *)data)[i]); break;
        default: return -1;
        }
        if (best < 0 || value > largest) { best = i; largest = value; }
    }
    return best;
}

int main(int argc, char **argv) {
    int64_t steps = 32;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--steps") == 0) {
        char *end;
        steps = strtoll(argv[2], &end, 10);
        if (*end || steps < 1) return fail("--steps wants a positive count", argv[2]);
        first = 3;
    }
    int64_t prompt_length = argc - first;
    if (prompt_length < 1) {
        fprintf(stderr, "usage: %s [--steps N] PROMPT_ID...\n", argv[0]);
        return 1;
    }
    int32_t method = -1;
    for (int32_t m = 0; m < ptec_method_count(); m++) {
        if (strcmp(ptec_method_name(m), "forward") == 0) method = m;
    }
    if (method < 0) return fail("the library has no method forward", NULL);
    if (ptec_input_count(method) != 2 || ptec_output_count(method) != 1)
        return fail("forward must take tokens and a position and return logits", NULL);
    const ptec_tensor_info *tokens_info = ptec_input_info(method, 0);
    const ptec_tensor_info *position_info = ptec_input_info(method, 1);
    const ptec_tensor_info *logits_info = ptec_output_info(method, 0);
    if (tokens_info->dtype != PTEC_INT64 || tokens_info->rank != 2 ||
        position_info->dtype != PTEC_INT64 || position_info->rank != 1)
        return fail("forward's inputs must be int64 [1, n] tokens and an int64 [1] position",
                    NULL);
    if (logits_info->rank < 2 || logits_info->rank > 8 ||
        (logits_info->dtype != PTEC_FLOAT32 && logits_info->dtype != PTEC_FLOAT16 &&
         logits_info->dtype != PTEC_BFLOAT16))
        return fail("forward must return float32, float16 or bfloat16 logits of rank 2 to 8",
                    NULL);
    if (prompt_length > tokens_info->max_sizes[1])
        return fail("the prompt is longer than one call of forward takes", NULL);

    int64_t *tokens = malloc((size_t)prompt_length * sizeof *tokens);
    for (int64_t i = 0; i < prompt_length; i++) {
        char *end;
        tokens[i] = strtoll(argv[first + i], &end, 10);
        if (*end) return fail("a prompt id is not an integer", argv[first + i]);
    }
    size_t element = logits_info->dtype == PTEC_FLOAT32 ? 4 : 2;
    int64_t logits_bytes = (int64_t)element;
    for (int32_t axis = 0; axis < logits_info->rank; axis++)
        logits_bytes *= logits_info->max_sizes[axis];
    void *logits = malloc((size_t)logits_bytes);
    int64_t token_sizes[2] = {1, prompt_length};
    int64_t position = 0;
    int64_t position_sizes[1] = {1};
    int64_t logits_sizes[8] = {0};
    int64_t *generated = malloc((size_t)steps * sizeof *generated);
    if (!tokens || !logits || !generated) return fail("out of memory", NULL);

    ptec_instance *instance = ptec_create();
    if (!instance) return fail("out of memory", NULL);
    double prefill_seconds = 0, decode_seconds = 0;
    for (int64_t step = 0; step < steps; step++) {
        ptec_tensor inputs[2] = {
            {.data = tokens, .sizes = token_sizes},
            {.data = &position, .sizes = position_sizes},
        };
        ptec_tensor outputs[1] = {{.data = logits, .sizes = logits_sizes}};
        double start = now_seconds();
        int32_t status = ptec_run(instance, method, inputs, outputs);
        double seconds = now_seconds() - start;
        if (status != PTEC_OK) return fail("forward failed", ptec_status_message(status));
        if (step == 0) prefill_seconds = seconds; else decode_seconds += seconds;
        /* The last row of the logits is the next token's. */
        int64_t vocabulary = logits_sizes[logits_info->rank - 1];
        int64_t count = 1;
        for (int32_t axis = 0; axis < logits_info->rank; axis++) count *= logits_sizes[axis];
        const char *last = (const char *)logits + (size_t)(count - vocabulary) * element;
        int64_t next = argmax(last, logits_info->dtype, vocabulary);
        if (next < 0) return fail("forward returned no logits", NULL);
        generated[step] = next;
        position += token_sizes[1];
        tokens[0] = next;
        token_sizes[1] = 1;
    }
    for (int64_t step = 0; step < steps; step++)
        printf("%s%" PRId64, step ? " " : "", generated[step]);
    printf("\n");
    printf("prefill: %" PRId64 " tokens in %.3f ms (%.1f tokens/s); decode: %" PRId64
           " tokens in %.3f ms (%.1f tokens/s)\n",
           prompt_length, prefill_seconds * 1e3, prompt_length / prefill_seconds, steps - 1,
           decode_seconds * 1e3, steps > 1 ? (steps - 1) / decode_seconds : 0.0);
    ptec_destroy(instance);
    free(generated);
    free(logits);
    free(tokens);
    return 0;
}
