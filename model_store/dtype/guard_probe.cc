#include "model_store/dtype/guard_probe.h"

#include <algorithm>

#include "common/status_macros.h"

namespace embedding::model_store {
namespace {

// Ordinary prose on unrelated subjects, mostly English with passages in other scripts, so that a
// guard sees the token statistics of real text. Random token ids did not: int8 with bf16
// attention passed them at 0.9994 but gave 0.975 on dictionary-word documents.
constexpr char kPassage[] =
    "The river rose quickly after three days of rain, and the farmers moved their animals to "
    "the higher fields before the bridge was closed. By the next morning the water had reached "
    "the doors of the old mill, which had stood there for more than two hundred years. "
    "Engineers later measured the flow and found it twice the highest level on record. "
    "In the laboratory, the students repeated the experiment with a smaller sample, adjusting "
    "the temperature by one degree at a time and writing every result in a notebook. The "
    "second series of measurements agreed with the first, although the instrument had been "
    "replaced in the meantime. Their supervisor asked them to explain why the error had "
    "shrunk. "
    "A contract between the two companies sets out the price, the delivery schedule and the "
    "penalty for each week of delay. Either party may end the agreement with ninety days of "
    "written notice, provided that all outstanding invoices have been paid in full. Disputes "
    "are settled by an arbitrator chosen jointly by both sides. "
    "To bake the bread, mix flour, water, salt and a little yeast, knead the dough for ten "
    "minutes and leave it covered in a warm place until it has doubled in size. Shape it "
    "gently, let it rest again, and bake it in a hot oven until the crust is dark and sounds "
    "hollow when tapped. "
    "The patient reported a mild headache and a fever that started two days ago. Blood "
    "pressure was normal, the lungs were clear, and no medication had been taken before the "
    "visit. The doctor recommended rest, plenty of fluids and a follow-up appointment if the "
    "symptoms did not improve within a week. "
    "When the orchestra began the final movement, the audience fell silent; the violins "
    "carried the melody while the horns answered from the back of the stage, and the hall "
    "seemed to hold its breath until the last chord faded. "
    "Der Zug nach Berlin hatte wegen eines Signalfehlers eine Stunde Verspätung, und viele "
    "Reisende verpassten ihren Anschluss. "
    "Le musée ouvrira une nouvelle salle consacrée aux instruments scientifiques du dix-huitième "
    "siècle au printemps prochain. "
    "El mercado del pueblo abre los sábados por la mañana y vende frutas, quesos y pan recién "
    "hecho. "
    "Городская библиотека продлила часы работы, чтобы студенты могли готовиться к экзаменам. "
    "Η θάλασσα ήταν ήρεμη και τα ψαράδικα επέστρεψαν στο λιμάνι πριν από τη δύση του ηλίου. "
    "今年の夏はとても暑く、多くの人が海や山へ出かけました。 "
    "这座城市的公共交通系统每天运送数百万名乘客。 "
    "Software that runs for months without a restart must release every resource it takes: "
    "memory, file handles, threads and network connections. Engineers measure it under load, "
    "record what it holds after each request, and fix any count that only ever grows. ";

}  // namespace

absl::StatusOr<std::vector<std::vector<int32_t>>> GuardProbe(const Tokenizer& tokenizer,
                                                             int64_t window) {
  ASSIGN_OR_RETURN(TokenizedText tokenized, tokenizer.Tokenize(kPassage));
  const std::vector<int32_t>& passage = tokenized.ids;
  if (passage.empty()) return absl::DataLossError("tokenizer: no tokens for the guard's passage");
  const int64_t content_window = std::max<int64_t>(1, window - tokenizer.num_special_tokens());
  // Short, medium and full windows, each from its own place in the passage (wrapping around),
  // so that no two sequences are the same text.
  std::vector<std::vector<int32_t>> probe;
  int64_t start = 0;
  for (int64_t length : {int64_t{5}, int64_t{14}, int64_t{38}, int64_t{98}, int64_t{178},
                         int64_t{298}, content_window, content_window}) {
    length = std::min(length, content_window);
    std::vector<int32_t> content(length);
    for (int64_t i = 0; i < length; ++i) content[i] = passage[(start + i) % passage.size()];
    probe.push_back(tokenizer.AddSpecialTokens(content));
    start += 97;
  }
  return probe;
}

}  // namespace embedding::model_store
