// Overloaded{lambdas...}: one visitor from several lambdas, for std::visit
// over the event and effect variants of the pure cores and their shells.
#pragma once

namespace strata {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace strata
