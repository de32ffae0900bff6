/* Checks <prefix>_set_threads on a library compiled from mobilenet_v2 (one
 * float input [1, 3, 224, 224], one float output [1, 1000]): the output is
 * the same bytes on 1, 2 and 3 threads, and bad calls get their status.
 * Prints "all checks passed" or the first failed check. */
#include <stdio.h>
#include <string.h>

#include "model.h"

#define CHECK(condition)                                            \
    do {                                                            \
        if (!(condition)) {                                         \
            printf("check failed, line %d: %s\n", __LINE__, #condition); \
            return 1;                                               \
        }                                                           \
    } while (0)

#define PIXELS (3 * 224 * 224)
#define CLASSES 1000

static float x[PIXELS], y[CLASSES], first[CLASSES];

static int run(ptec_instance *instance) {
    int64_t x_sizes[4] = {1, 3, 224, 224}, y_sizes[2] = {0, 0};
    ptec_tensor inputs[1] = {{x, x_sizes}};
    ptec_tensor outputs[1] = {{y, y_sizes}};
    return ptec_run(instance, 0, inputs, outputs);
}

int main(void) {
    for (int i = 0; i < PIXELS; i++)
        x[i] = (float)((i * 7919) % 2001 - 1000) / 500.0f;
    ptec_instance *instance = ptec_create();
    CHECK(instance != NULL);
    CHECK(run(instance) == PTEC_OK);
    memcpy(first, y, sizeof first);
    for (int32_t threads = 2; threads <= 3; threads++) {
        CHECK(ptec_set_threads(instance, threads) == PTEC_OK);
        memset(y, 0, sizeof y);
        CHECK(run(instance) == PTEC_OK);
        CHECK(memcmp(first, y, sizeof first) == 0);
    }
    CHECK(ptec_set_threads(NULL, 2) == PTEC_NULL_ARGUMENT);
    CHECK(ptec_set_threads(instance, 0) == PTEC_BAD_THREADS);
    CHECK(ptec_set_threads(instance, -3) == PTEC_BAD_THREADS);
    /* A refused count leaves the pool as it was. */
    memset(y, 0, sizeof y);
    CHECK(run(instance) == PTEC_OK);
    CHECK(memcmp(first, y, sizeof first) == 0);
    CHECK(ptec_set_threads(instance, 1) == PTEC_OK);
    memset(y, 0, sizeof y);
    CHECK(run(instance) == PTEC_OK);
    CHECK(memcmp(first, y, sizeof first) == 0);
    /* Destroyed with a pool running. */
    CHECK(ptec_set_threads(instance, 2) == PTEC_OK);
    ptec_destroy(instance);
    printf("all checks passed\n");
    return 0;
}
