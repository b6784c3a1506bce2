// random_device.cpp - seeds from std::random_device (libstdc++ reads the CPU's rdrand, an
// instruction nothing can trap, or getrandom): two std::threads each draw 4 values from their
// own random_device, seed a std::mt19937 with one and draw 4 numbers from it; main prints each
// thread's values in thread order. Every run prints other numbers.
#include <iostream>
#include <random>
#include <string>
#include <thread>

int main()
{
    std::string out[2];
    std::thread ts[2];
    for (int t = 0; t < 2; t++)
        ts[t] = std::thread([t, &out] {
            std::random_device rd;
            std::string s = "thread " + std::to_string(t) + ":";
            for (int i = 0; i < 4; i++)
                s += " " + std::to_string(rd());
            std::mt19937 g(rd());
            std::uniform_int_distribution<int> d(0, 999);
            for (int i = 0; i < 4; i++)
                s += " " + std::to_string(d(g));
            out[t] = s;
        });
    for (int t = 0; t < 2; t++) {
        ts[t].join();
        std::cout << out[t] << "\n";
    }
    return 0;
}
