#include <stdio.h>

#include "math.h"

int main(void) {
    int common = gcd(84, 36);
    printf("gcd=%d lcm=%d\n", common, lcm(84, 36));
    return 0;
}
