/* Checks the C ABI's answers to bad calls, on a library compiled from the
 * dyn_batch fixture (one input [<= 8, 16] with a dynamic batch, one output
 * [<= 8, 8]). Prints "all checks passed" or the first failed check. */
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

int main(void) {
    CHECK(ptec_method_count() == 1);
    CHECK(strcmp(ptec_method_name(0), "forward") == 0);
    CHECK(ptec_method_name(1) == NULL && ptec_method_name(-1) == NULL);
    CHECK(ptec_input_count(1) == PTEC_NO_SUCH_METHOD);
    CHECK(ptec_output_count(-1) == PTEC_NO_SUCH_METHOD);
    CHECK(ptec_input_info(0, 1) == NULL && ptec_input_info(0, -1) == NULL);
    CHECK(ptec_output_info(2, 0) == NULL);

    const ptec_tensor_info *input = ptec_input_info(0, 0);
    CHECK(input->dtype == PTEC_FLOAT32 && input->rank == 2);
    CHECK(input->sizes[0] == -1 && input->max_sizes[0] == 8);
    CHECK(input->sizes[1] == 16 && input->max_sizes[1] == 16);
    CHECK(input->dim_order[0] == 0 && input->dim_order[1] == 1);

    ptec_instance *instance = ptec_create();
    CHECK(instance != NULL);
    float x[8 * 16] = {0}, y[8 * 8];
    int64_t x_sizes[2] = {3, 16}, y_sizes[2] = {0, 0};
    ptec_tensor inputs[1] = {{x, x_sizes}};
    ptec_tensor outputs[1] = {{y, y_sizes}};

    CHECK(ptec_run(NULL, 0, inputs, outputs) == PTEC_NULL_ARGUMENT);
    CHECK(ptec_run(instance, 1, inputs, outputs) == PTEC_NO_SUCH_METHOD);
    CHECK(ptec_run(instance, -1, inputs, outputs) == PTEC_NO_SUCH_METHOD);
    CHECK(ptec_run(instance, 0, NULL, outputs) == PTEC_NULL_ARGUMENT);
    CHECK(ptec_run(instance, 0, inputs, NULL) == PTEC_NULL_ARGUMENT);
    ptec_tensor no_data[1] = {{NULL, x_sizes}};
    CHECK(ptec_run(instance, 0, no_data, outputs) == PTEC_NULL_ARGUMENT);
    ptec_tensor no_sizes[1] = {{y, NULL}};
    CHECK(ptec_run(instance, 0, inputs, no_sizes) == PTEC_NULL_ARGUMENT);

    x_sizes[0] = 9; /* above the bound */
    CHECK(ptec_run(instance, 0, inputs, outputs) == PTEC_BAD_SIZES);
    x_sizes[0] = -1;
    CHECK(ptec_run(instance, 0, inputs, outputs) == PTEC_BAD_SIZES);
    x_sizes[0] = 3;
    x_sizes[1] = 15; /* a fixed size */
    CHECK(ptec_run(instance, 0, inputs, outputs) == PTEC_BAD_SIZES);
    x_sizes[1] = 16;

    CHECK(ptec_run(instance, 0, inputs, outputs) == PTEC_OK);
    CHECK(y_sizes[0] == 3 && y_sizes[1] == 8);
    x_sizes[0] = 0; /* an empty batch is a batch */
    CHECK(ptec_run(instance, 0, inputs, outputs) == PTEC_OK);
    CHECK(y_sizes[0] == 0 && y_sizes[1] == 8);

    CHECK(strstr(ptec_status_message(PTEC_BAD_SIZES), "sizes") != NULL);
    CHECK(strstr(ptec_status_message(PTEC_NULL_ARGUMENT), "null") != NULL);
    CHECK(strcmp(ptec_status_message(PTEC_OK), "success") == 0);
    CHECK(strcmp(ptec_status_message(12345), "unknown status") == 0);
    CHECK(strcmp(ptec_status_message(-100), "unknown status") == 0);

    ptec_destroy(instance);
    ptec_destroy(NULL);
    printf("all checks passed\n");
    return 0;
}
