// stdin_cin.cpp - C++ input through iostreams only: main reads std::cin with std::getline
// (libstdc++ calls getc/ungetc on stdin from its shared library, never from this program),
// two std::threads read argv[1] with std::ifstream (>> words) and std::getline, under a
// std::mutex; prints line, word and byte counts and FNV-1a hashes.
#include <cstdint>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

static uint64_t fnv(uint64_t h, const std::string &s)
{
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "stdin_cin.input";
    std::string line;
    uint64_t h = 14695981039346656037ULL;
    size_t lines = 0, bytes = 0;
    while (std::getline(std::cin, line)) {
        h = fnv(h, line);
        lines++;
        bytes += line.size();
    }
    std::mutex m;
    std::vector<std::string> out(2);
    std::thread words([&] {
        std::ifstream f(path);
        std::string w;
        size_t n = 0;
        uint64_t wh = 14695981039346656037ULL;
        while (f >> w) {
            n++;
            wh = fnv(wh, w);
        }
        std::lock_guard<std::mutex> g(m);
        out[0] = "words " + std::to_string(n) + " " + std::to_string(wh);
    });
    std::thread flines([&] {
        std::ifstream f(path);
        std::string l;
        size_t n = 0;
        while (std::getline(f, l))
            n += l.size();
        std::lock_guard<std::mutex> g(m);
        out[1] = "file bytes " + std::to_string(n);
    });
    words.join();
    flines.join();
    std::cout << "stdin lines " << lines << " bytes " << bytes << " hash " << h << "\n"
              << out[0] << "\n"
              << out[1] << std::endl;
    return 0;
}
