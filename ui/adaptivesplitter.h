// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QSplitter>

namespace idempo {

/// A list and its detail pane: side by side when the splitter is at least `wideFrom` pixels
/// wide, the list above the pane when it is narrower (a 1024-pixel screen), so that the list
/// keeps the whole width for its columns instead of the pane's buttons taking half of it. Side by
/// side the list (the first widget) starts with the larger part, the pane (the second) with 30%
/// of the width or its minimum.
class AdaptiveSplitter final : public QSplitter
{
    Q_OBJECT
public:
    explicit AdaptiveSplitter(int wideFrom, QWidget *parent = nullptr);

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    int m_wideFrom;
};

} // namespace idempo
