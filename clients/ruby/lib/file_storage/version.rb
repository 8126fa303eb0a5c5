# frozen_string_literal: true

module FileStorage
  VERSION = '1.0.0'
end
