// The scanner behind `vramlab solution --diff`: it finds the functions defined at namespace scope
// with their bodies as written, and is not fooled by braces in comments, strings, characters, raw
// strings, preprocessor lines, classes, brace initializers or lambdas.
#include "tools/vramlab/commands/function_bodies.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace vramlab::cli {
namespace {

TEST(FunctionBodies, FindsNamespaceScopeFunctionsAndTheirBodiesAsWritten) {
  const std::string source = R"src(// a { comment
#include <map>
#define OPEN {
#define LONG(x) \
  { x }
namespace a::b {
/* } */
//! [stub]
int64_t first([[maybe_unused]] int64_t n,
              const std::string& s) {
  const char* brace = "}{";  // }
  const char c = '}';
  return n + 1'000;
}
//! [stub]
struct S {
  int method() { return 1; }
};
const std::vector<int> values = {1, 2};
std::vector<int> more{3, 4};
auto lambda = [](int x) { return x; };
namespace {
template <typename T>
T second(T x) { if (x) { return R"x(})x"[0]; } return x; }
}  // namespace
}  // namespace a::b
)src";
  const auto functions = function_definitions(source);
  ASSERT_EQ(functions.size(), 2u);
  EXPECT_EQ(functions[0].name, "first");
  EXPECT_EQ(functions[0].signature,
            "int64_t first([[maybe_unused]] int64_t n, const std::string& s)");
  EXPECT_EQ(functions[0].body,
            "\n  const char* brace = \"}{\";  // }\n  const char c = '}';\n  return n + 1'000;\n");
  EXPECT_EQ(functions[1].name, "second");
  EXPECT_EQ(functions[1].body, " if (x) { return R\"x(})x\"[0]; } return x; ");
}

// Functions with bodies of random nesting and random comment or string noise between them: each
// is found once, in order, with its body exactly.
TEST(FunctionBodies, RandomFilesGiveBackEveryBody) {
  std::mt19937 random(3);
  const std::vector<std::string> noise = {
      "// { x\n",    "/* } */\n", "const char* s = \"{\";\n", "struct T { void f() {} };\n",
      "int v{1};\n", "\n"};
  for (int round = 0; round < 50; ++round) {
    std::string source = "#include <x>\nnamespace n {\n";
    std::vector<std::string> names, bodies;
    const int count = 1 + static_cast<int>(random() % 5);
    for (int f = 0; f < count; ++f) {
      source += noise[random() % noise.size()];
      std::string body = "\n";
      const int blocks = static_cast<int>(random() % 4);
      for (int b = 0; b < blocks; ++b)
        body.append("  if (x").append(std::to_string(b)).append(") { y('{'); }  // }\n");
      body.append("  return ").append(std::to_string(random() % 100)).append(";\n");
      names.push_back(std::string(1, 'f').append(std::to_string(f)));
      bodies.push_back(body);
      source.append("int ").append(names.back()).append("(int x0, int x1,\n    int x2, int x3) {");
      source.append(body).append("}\n");
    }
    source += "}  // namespace n\n";
    const auto functions = function_definitions(source);
    ASSERT_EQ(functions.size(), names.size()) << source;
    for (size_t i = 0; i < names.size(); ++i) {
      EXPECT_EQ(functions[i].name, names[i]) << source;
      EXPECT_EQ(functions[i].body, bodies[i]) << source;
    }
  }
}

}  // namespace
}  // namespace vramlab::cli
