/* Runs a model compiled by `ptec compile` on inputs given as .npy files and
 * prints its outputs.
 *
 *     ptec compile model.pte -o model.so --header model.h
 *     cc main.c model.so -lm -o run_model
 *     LD_LIBRARY_PATH=. ./run_model [--method NAME] input0.npy input1.npy ...
 *
 * Each output is printed as a line "output N: DTYPE [SIZES]" followed by one
 * line of its values in row-major order. Works with any model compiled with
 * the default symbol prefix (ptec); the library describes its own methods,
 * inputs and outputs. Exits 1 on any error, with a message on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int fail(const char *what, const char *detail) {
    fprintf(stderr, "error: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return 1;
}

static int64_t element_size(int32_t dtype) {
    switch (dtype) {
    case PTEC_BOOL: case PTEC_UINT8: case PTEC_INT8: return 1;
    case PTEC_INT16: case PTEC_FLOAT16: case PTEC_BFLOAT16: return 2;
    case PTEC_INT32: case PTEC_FLOAT32: return 4;
    case PTEC_INT64: case PTEC_FLOAT64: return 8;
    default: return 0;
    }
}

/* The numpy type string of a ptec element type (little-endian). */
static const char *npy_descr(int32_t dtype) {
    switch (dtype) {
    case PTEC_BOOL: return "|b1";
    case PTEC_UINT8: return "|u1";
    case PTEC_INT8: return "|i1";
    case PTEC_INT16: return "<i2";
    case PTEC_INT32: return "<i4";
    case PTEC_INT64: return "<i8";
    case PTEC_FLOAT16: return "<f2";
    case PTEC_FLOAT32: return "<f4";
    case PTEC_FLOAT64: return "<f8";
    default: return NULL;
    }
}

static const char *dtype_name(int32_t dtype) {
    switch (dtype) {
    case PTEC_BOOL: return "bool";
    case PTEC_UINT8: return "uint8";
    case PTEC_INT8: return "int8";
    case PTEC_INT16: return "int16";
    case PTEC_INT32: return "int32";
    case PTEC_INT64: return "int64";
    case PTEC_FLOAT16: return "float16";
    case PTEC_BFLOAT16: return "bfloat16";
    case PTEC_FLOAT32: return "float32";
    case PTEC_FLOAT64: return "float64";
    default: return "unknown";
    }
}

/* Reads a C-order .npy file of the element type `dtype` and at most
 * `max_rank` dimensions: its data (malloc'd), sizes and rank. */
static int read_npy(const char *path, int32_t dtype, int32_t max_rank, void **data,
                    int64_t *sizes, int32_t *rank) {
    FILE *file = fopen(path, "rb");
    if (!file) return fail("cannot open", path);
    unsigned char magic[10];
    if (fread(magic, 1, 10, file) != 10 || memcmp(magic, "\x93NUMPY", 6) != 0) {
        fclose(file);
        return fail("not a .npy file", path);
    }
    size_t header_length = magic[8] | (magic[9] << 8);
    if (magic[6] != 1) { /* versions 2 and 3 have a 4-byte length */
        unsigned char more[2];
        if (fread(more, 1, 2, file) != 2) { fclose(file); return fail("truncated header", path); }
        header_length |= ((size_t)more[0] << 16) | ((size_t)more[1] << 24);
    }
    char *header = calloc(header_length + 1, 1);
    if (!header || fread(header, 1, header_length, file) != header_length) {
        free(header);
        fclose(file);
        return fail("truncated header", path);
    }
    const char *descr = npy_descr(dtype);
    char expected[32];
    snprintf(expected, sizeof expected, "'%s'", descr ? descr : "?");
    const char *shape = strstr(header, "'shape':");
    if (!strstr(header, expected) || strstr(header, "'fortran_order': True") || !shape) {
        free(header);
        fclose(file);
        return fail("the .npy file has the wrong element type or layout", path);
    }
    shape = strchr(shape, '(');
    *rank = 0;
    int64_t count = 1;
    for (const char *cursor = shape ? shape + 1 : ""; *cursor && *cursor != ')';) {
        char *end;
        long long size = strtoll(cursor, &end, 10);
        if (end == cursor) { cursor++; continue; }
        if (*rank == max_rank || size < 0) {
            free(header);
            fclose(file);
            return fail("the .npy file has the wrong rank", path);
        }
        sizes[(*rank)++] = size;
        count *= size;
        cursor = end;
    }
    free(header);
    size_t bytes = (size_t)(count * element_size(dtype));
    *data = malloc(bytes ? bytes : 1);
    if (!*data || fread(*data, 1, bytes, file) != bytes) {
        fclose(file);
        return fail("truncated data", path);
    }
    fclose(file);
    return 0;
}

static void print_values(const void *data, int32_t dtype, int64_t count) {
    for (int64_t i = 0; i < count; i++) {
        const char *separator = i ? " " : "";
        switch (dtype) {
        case PTEC_FLOAT32: printf("%s%.9g", separator, ((const float *)data)[i]); break;
        case PTEC_FLOAT64: printf("%s%.17g", separator, ((const double *)data)[i]); break;
        case PTEC_INT64: printf("%s%" PRId64, separator, ((const int64_t *)data)[i]); break;
        case PTEC_INT32: printf("%s%" PRId32, separator, ((const int32_t *)data)[i]); break;
        case PTEC_INT16: printf("%s%d", separator, ((const int16_t *)data)[i]); break;
        case PTEC_INT8: printf("%s%d", separator, ((const int8_t *)data)[i]); break;
        case PTEC_UINT8: case PTEC_BOOL: printf("%s%d", separator, ((const uint8_t *)data)[i]); break;
        default: printf("%s?", separator); break;
        }
    }
    printf("\n");
}

int main(int argc, char **argv) {
    int32_t method = 0;
    int first_input = 1;
    if (argc > 2 && strcmp(argv[1], "--method") == 0) {
        method = -1;
        for (int32_t m = 0; m < ptec_method_count(); m++) {
            if (strcmp(ptec_method_name(m), argv[2]) == 0) method = m;
        }
        if (method < 0) return fail("no such method", argv[2]);
        first_input = 3;
    }
    int32_t input_count = ptec_input_count(method);
    int32_t output_count = ptec_output_count(method);
    if (input_count < 0 || output_count < 0) return fail("the library has no methods", NULL);
    if (argc - first_input != input_count) {
        fprintf(stderr, "error: method %s takes %d inputs, %d given\n", ptec_method_name(method),
                input_count, argc - first_input);
        return 1;
    }
    ptec_tensor *inputs = calloc(input_count + 1, sizeof *inputs);
    ptec_tensor *outputs = calloc(output_count + 1, sizeof *outputs);
    for (int32_t i = 0; i < input_count; i++) {
        const ptec_tensor_info *info = ptec_input_info(method, i);
        for (int32_t axis = 0; axis < info->rank; axis++) {
            /* .npy files are row-major; a model that declares another layout
               (channels-last, say) wants its data permuted first. */
            if (info->dim_order[axis] != axis)
                return fail("this example feeds contiguous inputs only", argv[first_input + i]);
        }
        int32_t rank;
        inputs[i].sizes = calloc(info->rank + 1, sizeof(int64_t));
        if (read_npy(argv[first_input + i], info->dtype, info->rank, &inputs[i].data,
                     inputs[i].sizes, &rank))
            return 1;
        if (rank != info->rank) return fail("the .npy file has the wrong rank", argv[first_input + i]);
    }
    for (int32_t i = 0; i < output_count; i++) {
        const ptec_tensor_info *info = ptec_output_info(method, i);
        int64_t bytes = element_size(info->dtype);
        for (int32_t axis = 0; axis < info->rank; axis++) bytes *= info->max_sizes[axis];
        outputs[i].data = malloc(bytes ? bytes : 1);
        outputs[i].sizes = calloc(info->rank + 1, sizeof(int64_t));
    }
    ptec_instance *instance = ptec_create();
    if (!instance) return fail("out of memory", NULL);
    int32_t status = ptec_run(instance, method, inputs, outputs);
    if (status != PTEC_OK) return fail("run failed", ptec_status_message(status));
    for (int32_t i = 0; i < output_count; i++) {
        const ptec_tensor_info *info = ptec_output_info(method, i);
        int64_t count = 1;
        printf("output %d: %s [", i, dtype_name(info->dtype));
        for (int32_t axis = 0; axis < info->rank; axis++) {
            printf("%s%" PRId64, axis ? ", " : "", outputs[i].sizes[axis]);
            count *= outputs[i].sizes[axis];
        }
        printf("]\n");
        print_values(outputs[i].data, info->dtype, count);
    }
    ptec_destroy(instance);
    for (int32_t i = 0; i < input_count; i++) { free(inputs[i].data); free(inputs[i].sizes); }
    for (int32_t i = 0; i < output_count; i++) { free(outputs[i].data); free(outputs[i].sizes); }
    free(inputs);
    free(outputs);
    return 0;
}
