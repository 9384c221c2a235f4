#pragma once
// Defined in checksum.cpp, beside this header (it comes with the program that includes the header).
unsigned long long checksum(const int* v, int n);
