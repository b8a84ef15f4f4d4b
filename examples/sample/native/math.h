#ifndef SAMPLE_MATH_H
#define SAMPLE_MATH_H

/* Greatest common divisor of two non-negative integers. */
int gcd(int a, int b);

/* Least common multiple; 0 when either argument is 0. */
int lcm(int a, int b);

#endif
