import { formatPrice, type Price } from "./util";

const prices: Price[] = [
  { amount: 0.25, currency: "EUR" },
  { amount: 0.1, currency: "EUR" },
];

export function priceList(): string[] {
  return prices.map((price) => formatPrice(price));
}

console.log(priceList().join("\n"));
console.log(formatPrice({ amount: 12, currency: "USD" }));
